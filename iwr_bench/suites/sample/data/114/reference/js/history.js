// The table of past rounds under the game.
window.History = {
  rounds: [],
  add: function (round) {
    this.rounds.push(round);
    var body = document.getElementById('history-rows');
    body.innerHTML = '';
    this.rounds.forEach(function (r, n) {
      var row = document.createElement('tr');
      [String(n + 1), r.player, String(r.moves), String(r.pairs)].forEach(function (text) {
        var cell = document.createElement('td');
        cell.textContent = text;
        row.appendChild(cell);
      });
      body.appendChild(row);
    });
  }
};
