"""`python -m senpai`: the command line, as the fleets start every job (`senpai.wrapper.dispatch.job_spec`).

A job (`senpai job ...`, which asks for it with `senpai.cli.main.end_quickly`) ends without the
interpreter's teardown: once the command is done and its exit status known, the atexit handlers
run (the job's log is drained through the redaction filter, logging is flushed), stdout and stderr
are flushed, and the process exits. Tearing down the modules a job imported (PyGithub, pydantic,
Optuna...) frees nothing the job still needs and took 0.1-0.2 s of every job's wall time.
"""

import sys

from senpai.cli.main import ends_quickly, exit_now, main

try:
    main()
    code: object = 0
except SystemExit as e:
    code = e.code
if ends_quickly():
    exit_now(code)
sys.exit(code)
