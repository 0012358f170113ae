"""The SKILL.md and bundle format: parsing, validating, rendering and starting skills. Plain
Python (no Django), so the agent runtime, the API, the console and the commands share it."""
