"""The run stage: the project's code run in child processes with a time limit (recordings, line coverage, KaTeX, the specification), cached by what each result depends on."""
