"""The read model: which version of which skill a request gets, answered once, kept per process
and moved forward by what each write changed.

- `served`: the answer — `skill_served` for a request at a label (and pins), `skill_get` /
  `skill_version_for` / `skill_md_raw` for a request naming one skill;
- `effective`: precedence, the label rule every read path shares (`label_applied`) and the
  version rules, read from the database;
- `rollouts`: which side of a label's weighted rollout a request's subject is on, as pins;
- `skillsets`: which set version a request for a skillset gets (one rollout draw for the whole
  set) and the snapshot of exactly its members at that version's numbers;
- `skill`: `EffectiveSkill`, the one shape of a skill from here to the agent runtime;
- `snapshot`: the effective skills, their match index and the compiled rules of one generation,
  and how they move forward by the change log;
- `catalog`: every skill as the API's and the console's lists show them, moving forward too;
- `generation`: the number every cache is keyed by, and how a process hears it moved (LISTEN);
- `memo` and `results`: the per-process caches keyed by generation, and the reset of them all.

This module imports nothing, so the runtime can import `registry.readmodel.skill` without Django.
"""
