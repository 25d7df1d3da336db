"""The page and script the judge tests record a task from, and mutants of that page."""

from __future__ import annotations

from pathlib import Path

SITE = """<!doctype html><html><head><style>
body { font-family: "DejaVu Sans", sans-serif; margin: 0 } main { padding: 16px; height: 1200px }
header { background: #234; color: #fff; padding: 12px; font-size: 20px }
</style></head><body><header>Tally</header><main>
<p id="count">Count: 0</p><button class="btn" id="inc">Add one</button>
<button class="btn" id="reset">Reset</button>
<input id="name" placeholder="Your name"><p id="hello"></p></main>
<script>
let n = 0; const count = document.getElementById('count');
const inc = document.getElementById('inc');
inc.addEventListener('click', () => { n += 1; count.textContent = 'Count: ' + n; });
document.getElementById('reset').addEventListener('click', () => { n = 0; count.textContent = 'Count: 0'; });
document.getElementById('name').addEventListener('keydown', (e) => {
  if (e.key === 'Enter') document.getElementById('hello').textContent = 'Hello, ' + e.target.value + '!';
});
</script></body></html>"""

SCRIPT = {
    "id": 3,
    "classification": {"interaction_complexity": "L2", "visual_complexity": "V1", "domain": "Demo"},
    "recording_details": {"resolution": "640x400"},
    "actions": [
        {
            "type": "Click",
            "parameters": {"description": "the 'Add one' button"},
            "visual_evaluation_flag": True,
            "record": {"selector": "#inc"},
        },
        {
            "type": "Click",
            "parameters": {"description": "the 'Add one' button"},
            "visual_evaluation_flag": True,
            "logical_assertion": "the count changes to 'Count: 2'",
            "record": {"selector": "#inc", "expect_text": "Count: 2"},
        },
        {
            "type": "Type",
            "parameters": {"description": "the 'Your name' box", "text": "Ada"},
            "record": {"selector": "#name"},
        },
        {
            "type": "Press",
            "parameters": {"description": "press Enter to greet", "key": "Enter"},
            "visual_evaluation_flag": True,
            "logical_assertion": "a greeting 'Hello, Ada!' appears",
            "record": {"expect_text": "Hello, Ada!"},
        },
        {
            "type": "Scroll",
            "parameters": {"description": "scroll down the page"},
            "visual_evaluation_flag": True,
        },
    ],
}

MUTANTS = {
    "off_by_one": ("n += 1;", "n += n === 1 ? 2 : 1;", 1, "assertion_failed"),
    "label_changed": (">Add one<", ">Zzz<", 0, "element_not_found"),
    "short_page": ("height: 1200px", "height: 100px", 4, "no_scroll"),
    "recoloured": ("#234", "#a33", None, None),
}


def write_page(folder: Path, html: str) -> Path:
    """``folder/index.html`` holding ``html``; returns the folder."""
    folder.mkdir(parents=True)
    (folder / "index.html").write_text(html)
    return folder
