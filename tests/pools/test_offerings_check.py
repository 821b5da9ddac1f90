"""The deploy-time check that a pool's types are offered in its subnets' zones
(components/pools/offerings_check.py), the request it sends, and the offline preview's answer
to it (tools/lookups.py, from the dated offerings table)."""

from __future__ import annotations

import botocore.session
import pytest

from ecs_inference.pools.offerings_check import ZONE_ID_LOCATION, offerings_problems
from ecs_inference.sizing import ec2_offerings
from tools.lookups import LOOKUPS
from tools.preview import EXIT_PROGRAM, main

TOKEN = "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings"


def test_a_type_offered_in_none_of_the_zones_is_an_error_and_in_one_a_warning():
    zones = {"subnet-a": "use1-az1", "subnet-b": "use1-az3"}
    errors, warnings = offerings_problems(
        "p", ["g6e.xlarge", "inf2.xlarge", "g5.xlarge"], zones,
        {"g6e.xlarge": ["use1-az1"], "g5.xlarge": ["use1-az1", "use1-az3"]},
    )  # fmt: skip
    assert len(errors) == 1 and "inf2.xlarge is offered in none" in errors[0]
    assert "use1-az1, use1-az3" in errors[0]
    assert len(warnings) == 1 and "g6e.xlarge is offered in use1-az1 only" in warnings[0]


def test_the_request_is_one_describe_instance_type_offerings_accepts():
    model = botocore.session.get_session().get_service_model("ec2")
    shape = model.operation_model("DescribeInstanceTypeOfferings").input_shape
    assert ZONE_ID_LOCATION in shape.members["LocationType"].enum
    documented = shape.members["Filters"].documentation
    assert "<code>location</code>" in documented and "<code>instance-type</code>" in documented


def test_the_preview_answers_from_the_table_in_the_real_shape():
    answer = LOOKUPS[TOKEN](
        {
            "locationType": ZONE_ID_LOCATION,
            "filters": [
                {"name": "instance-type", "values": ["g6e.xlarge", "inf2.xlarge"]},
                {"name": "location", "values": ["use1-az1", "use1-az3"]},
            ],
        },
        "us-east-1",
    )
    assert answer["instanceTypes"] == ["g6e.xlarge"] and answer["locations"] == ["use1-az1"]
    assert answer["locationTypes"] == [ZONE_ID_LOCATION] and answer["id"] == "us-east-1"
    only_inf2 = [{"name": "instance-type", "values": ["inf2.xlarge"]}]
    names = LOOKUPS[TOKEN]({"locationType": "availability-zone", "filters": only_inf2}, "us-east-1")
    assert names["locations"] == ["us-east-1b", "us-east-1d", "us-east-1e", "us-east-1f"]


def test_a_type_offered_outside_the_subnets_zones_stops_the_preview(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # dev's subnets are in its first two zones (use1-az1, use1-az2): put g6e.xlarge elsewhere.
    regions = dict(ec2_offerings.OFFERINGS["g6e.xlarge"])
    regions["us-east-1"] = (regions["us-east-1"][0], ("use1-az4", "use1-az6"))
    monkeypatch.setitem(ec2_offerings.OFFERINGS, "g6e.xlarge", regions)
    code = main(["--stack", "dev", "--view", "update", "--no-policy"])
    err = capsys.readouterr().err
    assert code == EXIT_PROGRAM
    assert "g6e.xlarge is offered in none of the zones of its subnets" in err
