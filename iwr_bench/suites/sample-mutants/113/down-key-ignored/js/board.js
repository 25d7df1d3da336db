// A 4x4 board of numbers (0 = empty) that slides and merges one line at a time.
window.Board = {
  start: function () {
    return [[2, 2, 0, 0], [0, 0, 0, 0], [0, 0, 0, 8], [0, 0, 0, 8]];
  },
  slideLine: function (line) {
    var tiles = line.filter(function (v) { return v !== 0; });
    var out = [], gained = 0, merged = [];
    for (var i = 0; i < tiles.length; i++) {
      if (i + 1 < tiles.length && Rules.canMerge(tiles[i], tiles[i + 1])) {
        var v = Rules.mergeValue(tiles[i]);
        out.push(v); merged.push(out.length - 1); gained += Rules.points(v); i++;
      } else {
        out.push(tiles[i]);
      }
    }
    while (out.length < 4) out.push(0);
    return { line: out, gained: gained, merged: merged };
  },
  lines: function (dir) {
    var idx = [];
    for (var k = 0; k < 4; k++) {
      var row = [];
      for (var j = 0; j < 4; j++) {
        if (dir === 'left') row.push([k, j]);
        if (dir === 'right') row.push([k, 3 - j]);
        if (dir === 'up') row.push([j, k]);
        if (dir === 'down') row.push([3 - j, k]);
      }
      idx.push(row);
    }
    return idx;
  },
  move: function (grid, dir) {
    var next = grid.map(function (r) { return r.slice(); });
    var gained = 0, changed = false, mergedAt = [];
    this.lines(dir).forEach(function (cells) {
      var res = Board.slideLine(cells.map(function (c) { return grid[c[0]][c[1]]; }));
      cells.forEach(function (c, n) {
        if (next[c[0]][c[1]] !== res.line[n]) changed = true;
        next[c[0]][c[1]] = res.line[n];
      });
      res.merged.forEach(function (n) { mergedAt.push(cells[n]); });
      gained += res.gained;
    });
    return { grid: next, gained: gained, changed: changed, mergedAt: mergedAt };
  },
  spawn: function (grid) {
    var empty = [];
    grid.forEach(function (r, i) { r.forEach(function (v, j) { if (!v) empty.push([i, j]); }); });
    if (!empty.length) return null;
    var cell = empty[Math.floor(Math.random() * empty.length)];
    grid[cell[0]][cell[1]] = Rules.spawnValue();
    return cell;
  },
  best: function (grid) { return Math.max.apply(null, grid.map(function (r) { return Math.max.apply(null, r); })); }
};
