"""`premath atif validate`: verdicts, locations, exit codes, unreadable files."""

import shutil

import pytest

from tests.atif.test_conformance import ATIF_CORPUS
from tests.support.corpus import require_shared


@pytest.fixture
def fixtures(workdir):
    """A copy of a few corpus fixtures (and their images) in the test's folder."""
    require_shared(ATIF_CORPUS)
    for name in (
        "valid_v1_6_single_tool_call.json",
        "observation_unknown_source_call_id.json",
        "image_missing_file_and_unknown_field.json",
        "image_present_file.json",
    ):
        shutil.copy(ATIF_CORPUS / name, workdir / name)
    shutil.copytree(ATIF_CORPUS / "images", workdir / "images")
    return workdir


def test_valid_file(cli_run, fixtures):
    result = cli_run("atif", "validate", "valid_v1_6_single_tool_call.json")
    assert (result.exit_code, result.stdout, result.stderr) == (
        0,
        "valid: valid_v1_6_single_tool_call.json\n",
        "",
    )


def test_invalid_file_names_the_location(cli_run, fixtures):
    result = cli_run("atif", "validate", "observation_unknown_source_call_id.json", "--json")
    assert result.exit_code == 1
    assert result.json == {
        "valid": False,
        "files": [
            {
                "path": "observation_unknown_source_call_id.json",
                "valid": False,
                "errors": [
                    {
                        "location": "steps[2].observation.results[0].source_call_id",
                        "message": "Observation result references source_call_id 'call_999' "
                        "which is not found in step 3's tool_calls",
                    }
                ],
            }
        ],
    }


def test_several_files_and_every_error(cli_run, fixtures):
    result = cli_run(
        "atif",
        "validate",
        "valid_v1_6_single_tool_call.json",
        "image_missing_file_and_unknown_field.json",
    )
    assert result.exit_code == 1
    assert result.stdout == (
        "valid: valid_v1_6_single_tool_call.json\n"
        "invalid: image_missing_file_and_unknown_field.json\n"
        "  - steps[3].role: unexpected field (not part of ATIF schema)\n"
        "  - steps[1].message[1].source.path: referenced image file does not exist: "
        "images/also_missing.png\n"
    )


def test_media_check_is_relative_to_the_file_and_can_be_skipped(cli_run, fixtures, workdir):
    (workdir / "sub").mkdir()
    shutil.move(workdir / "image_present_file.json", workdir / "sub" / "t.json")
    assert cli_run("atif", "validate", "sub/t.json").exit_code == 1
    assert cli_run("atif", "validate", "sub/t.json", "--no-validate-media").exit_code == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{", "Invalid JSON: Expecting property name enclosed in double quotes"),
        (b"\xff\xfe", "Invalid JSON: not UTF-8 (byte 0)"),
        (b"[]", "Trajectory must be a JSON object/dict"),
    ],
)
def test_unreadable_documents(cli_run, workdir, content, message):
    (workdir / "t.json").write_bytes(content)
    result = cli_run("atif", "validate", "t.json", "--json")
    assert result.exit_code == 1
    (error,) = result.json["files"][0]["errors"]
    assert error["location"] == ""
    assert error["message"].startswith(message)


def test_missing_file_is_reported_not_raised(cli_run, workdir):
    result = cli_run("atif", "validate", "absent.json", "--json")
    assert result.exit_code == 1
    assert result.json["files"][0]["errors"] == [
        {"location": "", "message": "file not found: absent.json"}
    ]


def test_no_file_is_a_usage_error(cli_run):
    result = cli_run("atif", "validate", "--json")
    assert (result.exit_code, result.json["error"]["code"]) == (2, "usage_error")
