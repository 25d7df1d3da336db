// The board: state, drawing, the new-card form and keyboard control.
(function () {
  var state = {
    cards: [
      Cards.make('Write release notes', 'backlog', 'mia'),
      Cards.make('Update icons', 'backlog', 'jo'),
      Cards.make('Plan user interviews', 'backlog', 'lena'),
      Cards.make('Checkout page', 'doing', 'ravi'),
      Cards.make('Set up CI', 'done', 'mia')
    ],
    archived: [],
    picked: null
  };
  var form = document.getElementById('new-card');
  var input = document.getElementById('title');

  function log(text) {
    var item = document.createElement('li');
    item.textContent = text;
    document.getElementById('log').appendChild(item);
  }

  function say(text) { document.getElementById('message').textContent = text; }

  function draw() {
    Rules.lanes.forEach(function (lane) {
      var section = document.getElementById('lane-' + lane);
      var list = section.querySelector('.list');
      var mine = state.cards.filter(function (c) { return c.lane === lane; });
      list.innerHTML = '';
      mine.forEach(function (card) {
        var el = Cards.element(card, card === state.picked);
        el.addEventListener('click', function () { pick(card); });
        list.appendChild(el);
      });
      section.querySelector('.n').textContent = String(mine.length);
    });
    state.archived.forEach(function (card) {
      var el = Cards.element(card, false);
      el.style.display = 'none';
      document.querySelector('#lane-done .list').appendChild(el);
    });
    document.getElementById('archived').textContent = 'Archived: ' + state.archived.length;
  }

  function pick(card) {
    state.picked = card;
    say('Selected: ' + card.title);
    draw();
  }

  function move(by) {
    var card = state.picked;
    var lane = card && Rules.next(card.lane, by);
    if (!lane) return;
    if (!Rules.fits(state.cards, lane)) { say(Rules.names[lane] + ' is full'); return; }
    state.cards.splice(state.cards.indexOf(card), 1);
    card.lane = lane;
    state.cards.push(card);
    log(card.title + ' moved to ' + Rules.names[lane]);
    say('Moved: ' + card.title);
    draw();
  }

  function archive() {
    var card = state.picked;
    if (!card) return;
    state.cards.splice(state.cards.indexOf(card), 1);
    state.archived.push(card);
    state.picked = null;
    log(card.title + ' archived');
    say('Pick a card to move it');
    draw();
  }

  form.addEventListener('submit', function (e) {
    e.preventDefault();
    var title = input.value.trim();
    if (!title) return;
    var card = Cards.make(title, 'backlog');
    state.cards.unshift(card);
    input.value = '';
    input.blur();
    form.classList.remove('open');
    log(title + ' added to Backlog');
    draw();
  });
  document.addEventListener('keydown', function (e) {
    if (e.target === input) return;
    if (e.key === 'n' || e.key === 'N') {
      e.preventDefault();
      form.classList.add('open');
      input.focus();
    } else if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
      e.preventDefault();
      move(e.key === 'ArrowRight' ? 1 : -1);
    } else if (e.key === 'Delete' || e.key === 'Backspace') {
      e.preventDefault();
      archive();
    }
  });
  draw();
})();
