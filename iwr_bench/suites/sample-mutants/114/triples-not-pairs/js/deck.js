// The deck: six pictures, each twice, shuffled for every deal.
window.Deck = {
  faces: ['sun', 'moon', 'star', 'leaf', 'drop', 'bolt'],
  columns: 4,
  perMove: 3,
  deal: function () {
    var cards = [];
    this.faces.forEach(function (face) {
      cards.push({ face: face, up: false, done: false });
      cards.push({ face: face, up: false, done: false });
    });
    for (var i = cards.length - 1; i > 0; i--) {
      var j = Math.floor(Math.random() * (i + 1));
      var t = cards[i]; cards[i] = cards[j]; cards[j] = t;
    }
    return cards;
  },
  image: function (card) { return 'img/' + card.face + '.png'; },
  matches: function (open) { return open.every(function (c) { return c.face === open[0].face; }); },
  step: function (cursor, key, count) {
    var cols = this.columns;
    if (key === 'ArrowRight' && cursor % cols < cols - 1) return cursor + 1;
    if (key === 'ArrowLeft' && cursor % cols > 0) return cursor - 1;
    if (key === 'ArrowDown' && cursor + cols < count) return cursor + cols;
    if (key === 'ArrowUp' && cursor - cols >= 0) return cursor - cols;
    return cursor;
  }
};
