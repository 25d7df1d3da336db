// The rules of the game: which tiles merge, what a merge is worth, what spawns.
window.Rules = {
  canMerge: function (a, b) { return a === b; },
  mergeValue: function (a) { return a * 2; },
  points: function (merged) { return merged; },
  spawnValue: function () { return 2; },
  target: 64,
  medal: function (best) { return best >= 32 ? 'silver' : best >= 16 ? 'bronze' : 'none'; }
};
