"""The render stage: HTML as pure functions of the plans, the run's results and the links."""
