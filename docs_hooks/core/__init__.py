"""The core: a whole site walked through the stages (read, resolve, run, render), for every front end."""
