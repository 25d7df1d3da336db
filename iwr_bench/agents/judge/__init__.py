"""Judge agents: replay a task's actions on a generated page and decide each assertion."""
