"""A small 2048-style game, the script a task is recorded from, and mutants of the game.

The game keeps what real ones keep: merged tiles stay in the DOM under the new tile until the next
move, "+N" pop-ups fade out and stay, and the score has a screen-reader copy clipped to 1 px.
Spawns are deterministic (a 2 in the last empty cell), so every replay sees the same boards.
"""

from __future__ import annotations

from typing import Any

_PAGE = """<!doctype html><html><head><style>
body { font-family: "DejaVu Sans", sans-serif; margin: 0; background: #faf8ef; color: #776e65 }
header { display: flex; gap: 12px; align-items: center; padding: 12px }
h1 { margin: 0 12px 0 0; font-size: 28px }
.score-box, .best-box { position: relative; display: flex; flex-direction: column; align-items: center;
  background: #bbada0; color: #fff; padding: 4px 14px; border-radius: 4px; min-width: 48px }
.title { font-size: 12px; text-transform: uppercase } .value { font-size: 22px; font-weight: bold }
.pop { position: absolute; right: 4px; top: 0; animation: fade 0.15s forwards }
@keyframes fade { to { opacity: 0; top: -20px } }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0) }
#board { position: relative; width: 260px; height: 260px; background: #bbada0; margin: 0 12px;
  border-radius: 6px }
.tile { position: absolute; width: 56px; height: 56px; line-height: 56px; text-align: center;
  font-size: 26px; font-weight: bold; border-radius: 3px; background: #eee4da }
.t4 { background: #ede0c8 } .t8 { background: #f2b179; color: #fff }
#status { margin: 10px 12px } button { margin: 0 12px; font-size: 16px }
</style></head><body>
<header><h1>2048</h1>
<div class="score-box"><div class="title">Score</div><div class="value" id="score">0</div>
<span class="sr" id="score-live">Score 0</span></div>
<div class="best-box"><div class="title">Best tile</div><div class="value" id="best">4</div></div></header>
<div id="board"></div><p id="status">Join the tiles!</p><button id="new">New Game</button>
<script>
const START = [[2, 0, 2, 0], [0, 0, 0, 0], [4, 2, 0, 0], [0, 0, 0, 0]];
const boardEl = document.getElementById('board');
let grid, score, leftovers = [];
const at = (r, c) => `left:${4 + c * 64}px;top:${4 + r * 64}px`;
function tile(v, r, c, z) {
  const el = document.createElement('div');
  el.className = 'tile t' + v; el.textContent = v; el.style.cssText = at(r, c) + ';z-index:' + z;
  boardEl.appendChild(el); return el;
}
function render(merged) {
  boardEl.replaceChildren();
  for (const [v, r, c] of leftovers) tile(v, r, c, 1);
  for (let r = 0; r < 4; r++) for (let c = 0; c < 4; c++) if (grid[r][c]) {
    tile(grid[r][c], r, c, merged.has(r * 4 + c) ? NEW_Z : 2);
  }
  SHOW_SCORE(score);
  document.getElementById('score-live').textContent = 'Score ' + score;
  document.getElementById('best').textContent = Math.max(...grid.flat());
}
function SHOW_SCORE(s) { document.getElementById('score').textContent = s; }
function pop(points) {
  const p = document.createElement('div'); p.className = 'pop'; p.textContent = '+' + points;
  document.querySelector('.score-box').appendChild(p);
}
function slide(line) {  // line: [[value, r, c]] in move order; returns new values and merges
  const out = [], merges = [], gone = [];
  for (const cell of line) {
    const last = out[out.length - 1];
    if (last && !last.merged && last.v === cell[0]) {
      last.v = MERGE(last.v, cell[0]); last.merged = true; merges.push(cell[0] * 2);
      gone.push(last.from, cell);
    } else out.push({ v: cell[0], merged: false, from: cell });
  }
  return { out, merges, gone };
}
function move(dir) {
  const lines = [];
  for (let i = 0; i < 4; i++) {
    const idx = [0, 1, 2, 3].map((j) =>
      dir === 'left' ? [i, j] : dir === 'right' ? [i, 3 - j] : dir === 'up' ? [j, i] : [3 - j, i]);
    lines.push(idx);
  }
  const next = [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]];
  const merged = new Set(); let points = 0; leftovers = [];
  for (const idx of lines) {
    const cells = idx.filter(([r, c]) => grid[r][c]).map(([r, c]) => [grid[r][c], r, c]);
    const { out, merges, gone } = slide(cells);
    out.forEach((t, k) => {
      const [r, c] = idx[k]; next[r][c] = t.v;
      if (t.merged) { merged.add(r * 4 + c); leftovers.push([gone[0][0], r, c], [gone[1][0], r, c]); }
    });
    points += merges.reduce((a, b) => a + b, 0);
  }
  if (JSON.stringify(next) === JSON.stringify(grid)) { status('Nothing moved'); return; }
  grid = next; score += points * SCORE_FACTOR;
  for (let k = 15; k >= 0; k--) {
    const r = Math.floor(k / 4), c = k % 4;
    if (!grid[r][c]) { grid[r][c] = 2; break; }
  }
  render(merged);
  if (points) { pop(points); status('Merged for +' + points); } else status('Moved ' + dir);
}
function status(text) { document.getElementById('status').textContent = text; }
function newGame() {
  grid = START.map((row) => row.slice()); score = 0; leftovers = []; render(new Set()); status(NEW_STATUS);
}
const KEYS = { ArrowLeft: 'left', ArrowRight: 'right', ArrowUp: 'up', ArrowDown: 'down' };
document.addEventListener('keydown', (e) => { if (KEYS[e.key]) { e.preventDefault(); move(KEYS[e.key]); } });
document.getElementById('new').addEventListener('click', newGame);
newGame(); status('Join the tiles!');
</script></body></html>"""

_DEFAULTS = {
    "NEW_Z": "3",
    "SCORE_FACTOR": "1",
    "MERGE(last.v, cell[0])": "last.v * 2",
    "NEW_STATUS": "'New game'",
}


def game(**changes: str) -> str:
    """The game page, with the placeholders (or any other snippet) replaced as ``changes`` say."""
    html = _PAGE
    for key, value in {**_DEFAULTS, **changes}.items():
        assert key in html, key
        html = html.replace(key, value)
    return html


GAME = game()

SCRIPT: dict[str, Any] = {
    "id": 21,
    "classification": {"interaction_complexity": "L2", "visual_complexity": "V1", "domain": "Game"},
    "recording_details": {"resolution": "420x520"},
    "actions": [
        {
            "type": "Press",
            "parameters": {"description": "press the left arrow", "key": "ArrowLeft"},
            "visual_evaluation_flag": True,
            "logical_assertion": "the two 2 tiles in the top row merge into a 4 tile and the score shows 4",
            "record": {"expect_text": "Merged for +4"},
        },
        {
            "type": "Press",
            "parameters": {"description": "press the up arrow", "key": "ArrowUp"},
            "visual_evaluation_flag": True,
            "logical_assertion": "the two 4 tiles merge into an 8 tile and the score becomes 12",
            "record": {"expect_text": "Merged for +8"},
        },
        {
            "type": "Press",
            "parameters": {"description": "press the left arrow", "key": "ArrowLeft"},
            "visual_evaluation_flag": True,
            "logical_assertion": "the two 2 tiles in the top row merge into a 4 tile "
            "and the score becomes 16",
            "record": {"expect_text": "Merged for +4"},
        },
        {
            "type": "Click",
            "parameters": {"description": "the 'New Game' button"},
            "visual_evaluation_flag": True,
            "logical_assertion": "the board is reset to its starting tiles, the score shows 0 "
            "and the status says 'New game'",
            "record": {"selector": "#new", "expect_text": "New game"},
        },
    ],
}

MUTANTS: dict[str, tuple[dict[str, str], int | None, str]] = {
    # name: (replacements, expected first failing action, what is wrong)
    "score-doubled": ({"SCORE_FACTOR": "2"}, 0, "each merge scores twice its value"),
    "merge-into-8-broken": (
        {"MERGE(last.v, cell[0])": "(last.v >= 4 ? last.v : last.v * 2)"},
        1,
        "two 4 tiles merge into a 4 (the +8 pop-up still fades out)",
    ),
    "keyboard-handler-removed": (
        {"document.addEventListener('keydown'": "document.addEventListener('keyup-never'"},
        0,
        "arrow keys do nothing",
    ),
    "new-game-renamed": (
        {">New Game<": ">Restart<", "NEW_STATUS": "'Restarted'"},
        3,
        "the button reads Restart and the status Restarted",
    ),
    "new-tile-under-leftovers": ({"NEW_Z": "0"}, 0, "merged tiles paint over the new tile"),
    "score-box-frozen": (
        {"function SHOW_SCORE(s) { document": "function SHOW_SCORE(s) { if (s > 4) return; document"},
        1,
        "the score box stops at 4 (only the clipped screen-reader copy updates)",
    ),
}
"""4-6 mutants of the kinds users broke: merge rule, score, handler, label, hidden leftovers."""
