"""The built-in suite: source apps, the recorded tasks and their mutants."""
