"""Every read of the registry. Views, API views, the CLI and the runtime's adapter
(agents/turns/store.py) call these instead of building querysets themselves.

- `skills`: which source wins a name, the version a reader gets, the catalogue, raw SKILL.md;
- `versions`: versions, labels, files, zips and diffs;
- `rules`: force-include rules as the API and the console read them;
- `tokens`, `audit`, `accounts`: what the console's tokens, audit and users pages list;
- `resolve`: what an agent gets for a turn (rules fired, prompt block), and `skill_effective`:
  which version of which skill a request gets — the read model's answer (registry/readmodel/,
  which holds the snapshots, the catalogue, raw SKILL.md and the result cache);
- `analytics`: usage figures from the rollups.

The names most callers use are re-exported here (`from registry import selectors;
selectors.skill_get(...)`); `resolve` and `analytics` are imported as modules.
"""

from __future__ import annotations

from registry.models import ForceIncludeRule, Skill, SkillVersion
from registry.selectors.accounts import AccountRow, account_admins, account_get, account_list
from registry.selectors.audit import AuditEntry, AuditFilter, audit_log_for_user, audit_page
from registry.selectors.rules import (
    RuleRow,
    RuleSkill,
    SkillChoice,
    rule_get,
    rule_list,
    rule_rows,
    rule_skill_choices,
)
from registry.selectors.skills import (
    CatalogRow,
    EffectiveSkill,
    RawSkillMd,
    SkillRow,
    effective_skills,
    skill_catalog,
    skill_get,
    skill_list,
    skill_md_raw,
    skill_others,
    skill_sources,
    skill_version_for,
    skill_winner,
    skill_with_others,
    skills_named,
)
from registry.selectors.tokens import TokenRow, api_token_get_for_user, api_token_list, api_tokens_for_user
from registry.selectors.versions import (
    DIFF_TEXT_MAX,
    Audience,
    BundleZip,
    FileChange,
    LabelPointer,
    SkillLabels,
    SkillVersionDetail,
    VersionDiff,
    VersionRow,
    bundle_zip,
    bundle_zip_etag,
    label_move_audiences,
    label_pointer,
    skill_label_history,
    skill_label_state,
    skill_labels,
    skill_name_holder,
    skill_version_detail,
    skill_version_diff,
    skill_version_rows,
    skill_versions,
    stored_issues,
    text_lines,
    unified_diff,
    version_bundle,
    version_file,
    version_files,
)

__all__ = [
    "AccountRow",
    "Audience",
    "AuditEntry",
    "AuditFilter",
    "RuleRow",
    "RuleSkill",
    "SkillChoice",
    "TokenRow",
    "account_admins",
    "account_get",
    "account_list",
    "api_token_get_for_user",
    "api_token_list",
    "api_tokens_for_user",
    "audit_log_for_user",
    "audit_page",
    "rule_get",
    "rule_list",
    "rule_rows",
    "rule_skill_choices",
    "DIFF_TEXT_MAX",
    "BundleZip",
    "CatalogRow",
    "EffectiveSkill",
    "FileChange",
    "LabelPointer",
    "RawSkillMd",
    "SkillLabels",
    "SkillRow",
    "SkillVersionDetail",
    "VersionDiff",
    "VersionRow",
    "bundle_zip",
    "bundle_zip_etag",
    "dashboard_stats",
    "effective_skills",
    "label_move_audiences",
    "label_pointer",
    "skill_label_state",
    "skill_version_detail",
    "skill_version_rows",
    "stored_issues",
    "skill_catalog",
    "skill_get",
    "skills_named",
    "skill_label_history",
    "skill_labels",
    "skill_name_holder",
    "skill_list",
    "skill_md_raw",
    "skill_others",
    "skill_version_diff",
    "skill_version_for",
    "skill_versions",
    "skill_winner",
    "skill_sources",
    "skill_with_others",
    "text_lines",
    "unified_diff",
    "version_bundle",
    "version_file",
    "version_files",
]


def dashboard_stats() -> dict:
    return {
        "skills": Skill.objects.count(),
        "enabled_skills": Skill.objects.filter(enabled=True).count(),
        "versions": SkillVersion.objects.count(),
        "rules": ForceIncludeRule.objects.count(),
        "recent_versions": list(SkillVersion.objects.select_related("skill", "author").order_by("-created_at")[:10]),
    }
