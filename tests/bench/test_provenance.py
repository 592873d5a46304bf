"""premath_commit_sha read from .git files, never by spawning git."""

import pytest

from premath.bench.provenance import commit_sha

SHA = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def git(root, head, files=()):
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text(head + "\n")
    for name, content in files:
        path = root / ".git" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def test_loose_ref(tmp_path):
    root = git(tmp_path, "ref: refs/heads/main", [("refs/heads/main", SHA + "\n")])
    assert commit_sha(root) == SHA


def test_packed_ref(tmp_path):
    packed = f"# pack-refs with: peeled\n{OTHER} refs/heads/dev\n{SHA} refs/heads/main\n"
    root = git(tmp_path, "ref: refs/heads/main", [("packed-refs", packed)])
    assert commit_sha(root) == SHA


def test_detached_head(tmp_path):
    assert commit_sha(git(tmp_path, SHA)) == SHA


def test_worktree_pointer(tmp_path):
    main = git(tmp_path / "main", "ref: refs/heads/main", [("refs/heads/main", OTHER)])
    worktree_git = main / ".git" / "worktrees" / "wt"
    worktree_git.mkdir(parents=True)
    (worktree_git / "HEAD").write_text("ref: refs/heads/feature\n")
    (worktree_git / "commondir").write_text("../..\n")
    (main / ".git" / "refs" / "heads" / "feature").write_text(SHA)
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {worktree_git}\n")
    assert commit_sha(tmp_path / "wt") == SHA


@pytest.mark.parametrize("head", ["ref: refs/heads/gone", "not a sha"])
def test_unknown_is_none(tmp_path, head):
    assert commit_sha(git(tmp_path, head)) is None


def test_no_git_is_none(tmp_path):
    assert commit_sha(tmp_path) is None


def test_an_installed_wheel_falls_back_to_its_build_stamp(tmp_path):
    stamp = tmp_path / "BUILD_COMMIT"
    stamp.write_text(SHA + "\n")
    assert commit_sha(tmp_path / "no-checkout", stamp=stamp) == SHA
    stamp.write_text("not a sha\n")
    assert commit_sha(tmp_path / "no-checkout", stamp=stamp) is None
    assert commit_sha(tmp_path / "no-checkout", stamp=tmp_path / "missing") is None
