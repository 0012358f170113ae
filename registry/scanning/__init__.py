"""Scanning a version's files with cisco-ai-skill-scanner, outside Django.

`engine` runs in a child process of its own (it imports the scanner, ~5 s and its YARA rules);
`runner` is the parent's side: it starts that child once per worker process, hands it one folder
at a time and kills it when a scan outlives SCAN_TIMEOUT_SECONDS. `verdicts` turns findings into
the registry's verdict. Nothing here imports Django.
"""
