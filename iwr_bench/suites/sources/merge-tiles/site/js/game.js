// Game state, drawing and keyboard control.
(function () {
  var state = {};
  var board = document.getElementById('board');
  var keys = { ArrowLeft: 'left', ArrowRight: 'right', ArrowUp: 'up', ArrowDown: 'down' };

  function draw() {
    board.innerHTML = '';
    state.grid.forEach(function (row) {
      row.forEach(function (v) {
        var cell = document.createElement('div');
        cell.className = 'cell';
        if (v) {
          var tile = document.createElement('div');
          tile.className = 'tile t' + v;
          tile.textContent = v;
          cell.appendChild(tile);
        }
        board.appendChild(cell);
      });
    });
    document.getElementById('score').textContent = 'Score: ' + state.score;
    document.getElementById('moves').textContent = 'Moves: ' + state.moves;
    document.getElementById('medal').src = 'img/medal-' + Rules.medal(Board.best(state.grid)) + '.png';
    var won = Board.best(state.grid) >= Rules.target;
    document.getElementById('status').textContent = won ? 'You win!' : 'Reach ' + Rules.target + ' to win';
  }

  function popup(points) {
    var box = document.getElementById('popups');
    var el = document.createElement('div');
    el.className = 'popup';
    el.textContent = '+' + points;
    box.appendChild(el);
    setTimeout(function () { el.remove(); }, 300);
  }

  function newGame() {
    state = { grid: Board.start(), score: 0, moves: 0 };
    draw();
  }

  function play(dir) {
    var res = Board.move(state.grid, dir);
    if (!res.changed) return;
    state.grid = res.grid;
    state.score += res.gained;
    state.moves += 1;
    Board.spawn(state.grid);
    draw();
    if (res.gained) popup(res.gained);
  }

  document.addEventListener('keydown', function (e) {
    if (keys[e.key]) { e.preventDefault(); play(keys[e.key]); }
  });
  document.getElementById('new-game').addEventListener('click', newGame);
  newGame();
})();
