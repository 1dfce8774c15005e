"""Unpacking: a progress bar over the members (SOP holds 120k files), and a damaged archive said in one line."""

import pytest

from dml_core.data.archives import extract
from dml_core.errors import InputError
from tests.data.layouts import make_cub, make_tgz, make_zip


@pytest.mark.parametrize("kind", ["tgz", "zip"])
def test_extraction_shows_a_bar_over_the_members(tmp_path, capsys, kind):
    make_cub(tmp_path / "src")
    if kind == "tgz":
        archive = make_tgz(tmp_path / "CUB_200_2011.tgz", tmp_path / "src", ["CUB_200_2011"])
    else:
        archive = make_zip(tmp_path / "CUB_200_2011.zip", tmp_path / "src", "CUB_200_2011")
    members = len(list((tmp_path / "src" / "CUB_200_2011").rglob("*"))) + (kind == "tgz")  # tar lists the top
    extract(archive, tmp_path / "out", progress=True)
    err = capsys.readouterr().err
    # A zip's member count is known at the start (a bar), a compressed tar's only at its end (a count).
    counted = f"| {members}/{members} " if kind == "zip" else f": {members} files "
    assert f"extract {archive.name}" in err and counted in err
    assert (tmp_path / "out" / "CUB_200_2011" / "images.txt").is_file()
    extract(archive, tmp_path / "quiet")
    assert capsys.readouterr().err == ""


def test_a_damaged_archive_is_one_line(tmp_path):
    (tmp_path / "broken.tgz").write_bytes(b"<html>not an archive</html>")
    with pytest.raises(InputError, match=r"broken.tgz: cannot unpack \(.*\); the archive is damaged") as error:
        extract(tmp_path / "broken.tgz", tmp_path / "out")
    assert "\n" not in str(error.value)
