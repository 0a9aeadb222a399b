"""Machine output is a contract: every command's JSON validates against its documented schema
(docs/schemas/*.schema.json, described in docs/json-schema.md), errors included."""

import json

import jsonschema
import pytest

from conftest import FIXTURES, ROOT, SAMPLES, scanprobe

SCHEMAS = ROOT / "docs" / "schemas"


def validate(name, body):
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(body, schema, cls=jsonschema.Draft202012Validator)


def test_inspect_json_validates(backend):
    res = scanprobe("inspect", SAMPLES / "seed000_pixel_loop.py", "--format", "json")
    assert res.rc == 1, res
    validate("report", res.json())


def test_profile_json_validates(backend):
    res = scanprobe("profile", FIXTURES / "static_scan.py", "--runs", "1", "--format", "json")
    assert res.rc == 0, res
    body = res.json()
    validate("profile", body)
    assert body["targets"][0]["profile"]["buffers"], body


def test_fix_json_validates(backend):
    res = scanprobe("fix", FIXTURES / "map_scan.py", "--runs", "1", "--format", "json")
    assert res.rc == 0, res
    body = res.json()
    validate("fix", body)
    (f,) = body["fixes"]
    assert f["status"] == "verified" and f["after"]["remaining"] == {"SP002": 0}


def test_check_json_validates(backend):
    res = scanprobe("check", SAMPLES / "seed000_pixel_loop.py", SAMPLES / "_backend.py", "--max-peak", "1kB",
                    "--format", "json")
    assert res.rc == 1, res
    body = res.json()
    validate("check", body)
    assert body["summary"]["exit_code"] == 1 and body["skipped"]


@pytest.mark.parametrize("command", ["inspect", "profile", "fix"])
def test_error_json_validates(backend, command):
    res = scanprobe(command, "missing.py", "--format", "json")
    assert res.rc == 2, res
    validate("error", res.json())
