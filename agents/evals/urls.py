"""`/api/v1/` routes of evals, included by config/urls.py before the registry's."""

from django.urls import path

from agents.evals import api as eval_api
from agents.evals import catalog_api, model_check_api

urlpatterns = [
    path("skills/<str:name>/evals", eval_api.EvalSuiteApi.as_view(), name="api-skill-evals"),
    path(
        "skills/<str:name>/evals/evals.json", eval_api.EvalSuiteSkillCreatorApi.as_view(), name="api-skill-evals-json"
    ),
    path(
        "skills/<str:name>/evals/revisions/<int:number>/accept",
        eval_api.EvalSuiteRevisionAcceptApi.as_view(),
        name="api-skill-evals-accept",
    ),
    path("skills/<str:name>/evals/runs", eval_api.EvalRunListCreateApi.as_view(), name="api-skill-eval-runs"),
    path("evals/runs/compare", eval_api.EvalRunCompareApi.as_view(), name="api-eval-runs-compare"),
    path("evals/runs/<uuid:run_id>", eval_api.EvalRunDetailApi.as_view(), name="api-eval-run"),
    path("evals/runs/<uuid:run_id>/cancel", eval_api.EvalRunCancelApi.as_view(), name="api-eval-run-cancel"),
    path("catalog/evals/runs", catalog_api.CatalogEvalRunCreateApi.as_view(), name="api-catalog-eval-runs"),
    path(
        "catalog/evals/runs/<uuid:run_id>", catalog_api.CatalogEvalRunDetailApi.as_view(), name="api-catalog-eval-run"
    ),
    path(
        "catalog/evals/runs/<uuid:run_id>/cancel",
        catalog_api.CatalogEvalRunCancelApi.as_view(),
        name="api-catalog-eval-run-cancel",
    ),
    path("catalog/evals/model-check", model_check_api.ModelCheckCreateApi.as_view(), name="api-model-check-create"),
    path(
        "catalog/evals/model-checks/<uuid:check_id>",
        model_check_api.ModelCheckDetailApi.as_view(),
        name="api-model-check",
    ),
]
