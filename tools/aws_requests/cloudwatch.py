"""CloudWatch: metric alarms and dashboards."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from ecs_inference.contracts.aws_limits import ALARM_METRIC_QUERIES_MAX, DASHBOARD_MAX_WIDGETS
from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    as_int,
    drop_none,
    known,
    maps,
    rule,
    single,
    tags,
)


@maps("aws:cloudwatch/metricAlarm:MetricAlarm")
def _metric_alarm(i: Inputs, name: str | None) -> list[ApiRequest]:
    metrics = []
    for q in i.get("metricQueries") or []:
        stat = single(q.get("metric"))
        metrics.append(
            drop_none(
                {
                    "Id": q.get("id"),
                    "Expression": q.get("expression"),
                    "Label": q.get("label"),
                    "ReturnData": q.get("returnData"),
                    "Period": q.get("period"),
                    "AccountId": q.get("accountId"),
                    "MetricStat": drop_none(
                        {
                            "Metric": drop_none(
                                {
                                    "Namespace": stat.get("namespace"),
                                    "MetricName": stat.get("metricName"),
                                    "Dimensions": [
                                        {"Name": k, "Value": v}
                                        for k, v in (stat.get("dimensions") or {}).items()
                                    ]
                                    or None,
                                }
                            ),
                            "Period": stat.get("period"),
                            "Stat": stat.get("stat"),
                            "Unit": stat.get("unit"),
                        }
                    )
                    if isinstance(stat, Mapping)
                    else None,
                }
            )
        )
    dims = i.get("dimensions")
    return [
        ApiRequest(
            "cloudwatch",
            "PutMetricAlarm",
            drop_none(
                {
                    "AlarmName": name,
                    "AlarmDescription": i.get("alarmDescription"),
                    "ActionsEnabled": i.get("actionsEnabled"),
                    "OKActions": i.get("okActions"),
                    "AlarmActions": i.get("alarmActions"),
                    "InsufficientDataActions": i.get("insufficientDataActions"),
                    "MetricName": i.get("metricName"),
                    "Namespace": i.get("namespace"),
                    "Statistic": i.get("statistic"),
                    "ExtendedStatistic": i.get("extendedStatistic"),
                    "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()]
                    if isinstance(dims, Mapping)
                    else None,
                    "Period": i.get("period"),
                    "Unit": i.get("unit"),
                    "EvaluationPeriods": i.get("evaluationPeriods"),
                    "DatapointsToAlarm": i.get("datapointsToAlarm"),
                    "Threshold": i.get("threshold"),
                    "ComparisonOperator": i.get("comparisonOperator"),
                    "TreatMissingData": i.get("treatMissingData"),
                    "Metrics": metrics or None,
                    "ThresholdMetricId": i.get("thresholdMetricId"),
                    "Tags": tags(i.get("tags")),
                }
            ),
        )
    ]


@rule("aws:cloudwatch/metricAlarm:MetricAlarm")
def _metric_alarm_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # PutMetricAlarm: a single metric or metric math, not both; at most 10 metric queries;
    # datapoints to alarm no more than the evaluation periods; periods of 10, 20, 30 or a
    # multiple of 60 seconds.
    if i.get("metricName") and i.get("metricQueries"):
        yield "metricName and metricQueries cannot both be set"
    queries = i.get("metricQueries")
    if isinstance(queries, list) and len(queries) > ALARM_METRIC_QUERIES_MAX:
        yield f"{len(queries)} metric queries, at most {ALARM_METRIC_QUERIES_MAX}"
    points, periods = i.get("datapointsToAlarm"), i.get("evaluationPeriods")
    if isinstance(points, (int, float)) and isinstance(periods, (int, float)) and points > periods:
        yield f"datapointsToAlarm {as_int(points)} exceeds evaluationPeriods {as_int(periods)}"
    period = i.get("period")
    if isinstance(period, (int, float)) and not (period in (10, 20, 30) or period % 60 == 0):
        yield f"period {as_int(period)} must be 10, 20, 30 or a multiple of 60 seconds"


@maps("aws:cloudwatch/dashboard:Dashboard")
def _dashboard(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "cloudwatch",
            "PutDashboard",
            {"DashboardName": i.get("dashboardName"), "DashboardBody": i.get("dashboardBody")},
        )
    ]


@rule("aws:cloudwatch/dashboard:Dashboard")
def _dashboard_body(i: Inputs, _name: str | None) -> Iterable[str]:
    body = i.get("dashboardBody")
    if not isinstance(body, str) or not known(body):
        return
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as exc:
        yield f"dashboardBody is not valid JSON: {exc.msg}"
        return
    widgets = doc.get("widgets") if isinstance(doc, dict) else None
    if not isinstance(widgets, list):
        yield "dashboardBody needs a `widgets` list"
    elif len(widgets) > DASHBOARD_MAX_WIDGETS:
        yield f"{len(widgets)} widgets, at most {DASHBOARD_MAX_WIDGETS} per dashboard"
