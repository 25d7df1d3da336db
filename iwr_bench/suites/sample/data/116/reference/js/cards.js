// Cards: making one (with a random assignee) and drawing one.
window.Cards = {
  serial: 0,
  make: function (title, lane, who) {
    this.serial += 1;
    if (!who) who = Rules.people[Math.floor(Math.random() * Rules.people.length)];
    return { key: this.serial, title: title, lane: lane, who: who };
  },
  avatar: function (card) { return 'img/avatar-' + card.who + '.png'; },
  element: function (card, picked) {
    var el = document.createElement('div');
    el.className = 'card' + (picked ? ' picked' : '');
    el.tabIndex = 0;
    var img = document.createElement('img');
    img.src = this.avatar(card);
    img.width = 32; img.height = 32; img.alt = card.who;
    var title = document.createElement('span');
    title.className = 'card-title';
    title.textContent = card.title;
    el.appendChild(img);
    el.appendChild(title);
    return el;
  }
};
