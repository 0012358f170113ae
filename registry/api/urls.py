"""`/api/v1/` routes (SPEC §5). The agent turn endpoints (`/api/v1/agent/...`) are the agents app's,
included by config/urls.py."""

from __future__ import annotations

from django.urls import path

from registry.api import (
    attestations,
    capabilities,
    catalog_routing,
    dependencies,
    label_policies,
    resolve,
    rules,
    scans,
    skills,
    skillsets,
    usage,
    webhooks,
)

urlpatterns = [
    path("skills", skills.SkillListCreateApi.as_view(), name="api-skills"),
    path("skills/<str:name>", skills.SkillDetailApi.as_view(), name="api-skill"),
    path("skills/<str:name>/SKILL.md", skills.SkillMarkdownApi.as_view(), name="api-skill-md"),
    path("skills/<str:name>/bundle.zip", skills.SkillBundleApi.as_view(), name="api-skill-bundle"),
    path("skills/<str:name>/files/<path:path>", skills.SkillFileApi.as_view(), name="api-skill-file"),
    path("skills/<str:name>/versions", skills.SkillVersionListApi.as_view(), name="api-skill-versions"),
    path("skills/<str:name>/versions/<int:number>", skills.SkillVersionDetailApi.as_view(), name="api-skill-version"),
    path(
        "skills/<str:name>/versions/<int:number>/capabilities",
        capabilities.SkillVersionCapabilitiesApi.as_view(),
        name="api-skill-version-capabilities",
    ),
    path(
        "skills/<str:name>/versions/<int:number>/attestation",
        attestations.VersionAttestationApi.as_view(),
        name="api-skill-version-attestation",
    ),
    path(
        "skills/<str:name>/versions/<int:number>/scan",
        scans.SkillVersionScanApi.as_view(),
        name="api-skill-version-scan",
    ),
    path("skills/<str:name>/dependencies", dependencies.SkillDependenciesApi.as_view(), name="api-skill-dependencies"),
    path("skills/<str:name>/diff", skills.SkillDiffApi.as_view(), name="api-skill-diff"),
    path("skills/<str:name>/labels", skills.SkillLabelListApi.as_view(), name="api-skill-labels"),
    path("skills/<str:name>/labels/<str:label>", skills.SkillLabelApi.as_view(), name="api-skill-label"),
    path(
        "skills/<str:name>/labels/<str:label>/rollout",
        skills.SkillLabelRolloutApi.as_view(),
        name="api-skill-label-rollout",
    ),
    path("skillsets", skillsets.SkillsetListApi.as_view(), name="api-skillsets"),
    path("skillsets/<str:name>", skillsets.SkillsetApi.as_view(), name="api-skillset"),
    path(
        "skillsets/<str:name>/versions/<int:number>",
        skillsets.SkillsetVersionApi.as_view(),
        name="api-skillset-version",
    ),
    path("skillsets/<str:name>/diff", skillsets.SkillsetDiffApi.as_view(), name="api-skillset-diff"),
    path("skillsets/<str:name>/labels/<str:label>", skillsets.SkillsetLabelApi.as_view(), name="api-skillset-label"),
    path(
        "skillsets/<str:name>/labels/<str:label>/rollout",
        skillsets.SkillsetLabelRolloutApi.as_view(),
        name="api-skillset-label-rollout",
    ),
    path(
        "skillsets/<str:name>/labels/<str:label>/rollback",
        skillsets.SkillsetLabelRollbackApi.as_view(),
        name="api-skillset-label-rollback",
    ),
    path("label-policies", label_policies.LabelPolicyListApi.as_view(), name="api-label-policies"),
    path("label-policies/<str:label>", label_policies.LabelPolicyApi.as_view(), name="api-label-policy"),
    path("rules", rules.RuleListCreateApi.as_view(), name="api-rules"),
    path("rules/test", rules.RulesTestApi.as_view(), name="api-rules-test"),
    path("rules/<int:rule_id>", rules.RuleDetailApi.as_view(), name="api-rule"),
    path("match", resolve.MatchApi.as_view(), name="api-match"),
    path("resolve", resolve.ResolveApi.as_view(), name="api-resolve"),
    path("usage", usage.UsageApi.as_view(), name="api-usage"),
    path("analytics/skills", usage.AnalyticsSkillsApi.as_view(), name="api-analytics-skills"),
    path(
        "analytics/skills/<str:name>/timeseries",
        usage.AnalyticsTimeseriesApi.as_view(),
        name="api-analytics-timeseries",
    ),
    path("analytics/skills/<str:name>/compare", usage.AnalyticsCompareApi.as_view(), name="api-analytics-compare"),
    path("analytics/funnel", usage.AnalyticsFunnelApi.as_view(), name="api-analytics-funnel"),
    path("webhooks", webhooks.WebhookListCreateApi.as_view(), name="api-webhooks"),
    path("webhooks/<int:webhook_id>", webhooks.WebhookDetailApi.as_view(), name="api-webhook"),
    path(
        "webhooks/<int:webhook_id>/deliveries", webhooks.WebhookDeliveryListApi.as_view(), name="api-webhook-deliveries"
    ),
    path("catalog/routing", catalog_routing.CatalogRoutingApi.as_view(), name="api-catalog-routing"),
    path("analytics/failing", usage.AnalyticsFailingApi.as_view(), name="api-analytics-failing"),
]
