// The board's rules: its lanes in order, how many cards each may hold, and who can be assigned.
window.Rules = {
  lanes: ['backlog', 'doing', 'done'],
  names: { backlog: 'Backlog', doing: 'Doing', done: 'Done' },
  limits: { backlog: 12, doing: 1, done: 12 },
  people: ['mia', 'ravi', 'jo', 'lena'],
  next: function (lane, by) {
    var i = this.lanes.indexOf(lane) + by;
    return i >= 0 && i < this.lanes.length ? this.lanes[i] : null;
  },
  fits: function (cards, lane) {
    return cards.filter(function (c) { return c.lane === lane; }).length < this.limits[lane];
  }
};
