"""The base branch of a worker's clone when `--base-ref` is not given (issue 35): the branch
the remote's HEAD names; else its only branch; else a refusal that says what to pass."""

from pathlib import Path

import pytest

from premath.errors import InputInvalid
from premath.harness.delivery import GitDelivery
from tests.support.remote import git


def bare_remote(folder: Path, *branches: str) -> Path:
    """`git init --bare` (HEAD names `master`) and a push of each branch, none of them master."""
    remote, source = folder / "remote.git", folder / "source"
    git("init", "-q", "--bare", "-b", "master", str(remote), cwd=folder)
    git("init", "-q", "-b", "work", str(source), cwd=folder)
    git("commit", "-q", "--allow-empty", "-m", "first", cwd=source)
    for branch in branches:
        git("push", "-q", str(remote), f"HEAD:refs/heads/{branch}", cwd=source)
    return remote


def prepared(folder: Path, remote: Path) -> tuple[GitDelivery, list[str]]:
    heard: list[str] = []
    delivery = GitDelivery(str(remote), str(folder / "home"), "w1")
    delivery.prepare(heard.append)
    return delivery, heard


def test_a_dangling_head_with_one_branch_uses_it_and_says_so(tmp_path):
    remote = bare_remote(tmp_path, "main")
    delivery, heard = prepared(tmp_path, remote)
    assert delivery.base_ref == "main"
    assert heard == [
        f"[worker:w1] the HEAD of {remote} names no branch; using its only branch main "
        "(pass --base-ref BRANCH to choose)"
    ]
    delivery.reset()  # the base branch checks out
    assert (Path(delivery.worktree) / ".git").is_dir()


def test_a_head_that_names_a_branch_is_followed_silently(tmp_path):
    remote = bare_remote(tmp_path, "main", "trunk")
    git("symbolic-ref", "HEAD", "refs/heads/trunk", cwd=remote)
    delivery, heard = prepared(tmp_path, remote)
    assert (delivery.base_ref, heard) == ("trunk", [])


@pytest.mark.parametrize(
    ("branches", "message"),
    [
        (
            ("main", "dev"),
            ": its HEAD names no branch and it has 2 branches (dev, main): pass --base-ref BRANCH",
        ),
        ((), " (an empty repository?): push a first commit, or pass --base-ref BRANCH"),
    ],
)
def test_otherwise_the_refusal_says_what_to_pass(tmp_path, branches, message):
    remote = bare_remote(tmp_path, *branches)
    with pytest.raises(InputInvalid) as refused:
        prepared(tmp_path, remote)
    assert str(refused.value.message) == f"cannot tell the default branch of {remote}{message}"
