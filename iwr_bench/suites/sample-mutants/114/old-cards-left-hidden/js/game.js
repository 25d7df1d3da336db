// Game state, drawing, mouse and keyboard control.
(function () {
  var state = { cards: [], cursor: 0, open: [], moves: 0, pairs: 0 };
  var table = document.getElementById('table');
  var player = document.getElementById('player');
  var arrows = { ArrowLeft: true, ArrowRight: true, ArrowUp: true, ArrowDown: true };

  function name() { return player.value.trim() || 'Guest'; }

  function draw() {
    Array.prototype.forEach.call(table.children, function (old) { old.style.display = 'none'; });
    state.cards.forEach(function (card, i) {
      var el = document.createElement('div');
      el.className = 'card' + (card.up ? ' up' : '') + (card.done ? ' done' : '') + (i === state.cursor ? ' ring' : '');
      if (card.up) {
        var img = document.createElement('img');
        img.src = Deck.image(card);
        img.width = 96; img.height = 96; img.alt = card.face;
        el.appendChild(img);
      }
      el.addEventListener('click', function () { state.cursor = i; turn(); });
      table.appendChild(el);
    });
    document.getElementById('moves').textContent = 'Moves: ' + state.moves;
    document.getElementById('pairs').textContent = 'Pairs: ' + state.pairs;
  }

  function say(text) { document.getElementById('status').textContent = text; }

  function deal() {
    if (state.cards.length) History.add({ player: name(), moves: state.moves, pairs: state.pairs });
    state = { cards: Deck.deal(), cursor: 0, open: [], moves: 0, pairs: 0 };
    document.getElementById('deal').blur();
    player.blur();
    draw();
    say('Find the ' + Deck.faces.length + ' pairs, ' + name());
  }

  function turn() {
    var card = state.cards[state.cursor];
    if (!card || card.up) return;
    if (state.open.length === Deck.perMove) {
      state.open.forEach(function (c) { c.up = false; });
      state.open = [];
    }
    card.up = true;
    state.open.push(card);
    if (state.open.length === Deck.perMove) {
      state.moves += 1;
      if (Deck.matches(state.open)) {
        state.open.forEach(function (c) { c.done = true; });
        state.open = [];
        state.pairs += 1;
        say(state.pairs === Deck.faces.length ? 'All pairs found!' : 'A match! Keep going');
      } else {
        say('No match this time');
      }
    }
    draw();
  }

  player.addEventListener('input', function () {
    document.getElementById('greeting').textContent = 'Good luck, ' + name() + '!';
  });
  document.addEventListener('keydown', function (e) {
    if (e.target === player || !state.cards.length) return;
    if (arrows[e.key]) {
      e.preventDefault();
      state.cursor = Deck.step(state.cursor, e.key, state.cards.length);
      draw();
    } else if (e.key === 'Enter') {
      e.preventDefault();
      turn();
    }
  });
  document.getElementById('deal').addEventListener('click', deal);
  draw();
})();
