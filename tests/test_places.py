"""``tl.storage_places`` and ``tl.saved_file`` read where storages live from torch and the operating system:
checked here against ``is_shared()``, data pointers, ``/proc/self/maps`` and the zip directory itself."""

import io
import os
import sys
import zipfile

import pytest
import torch
from torch import nn

import tutorial_lib as tl
from tutorial_lib.facts.places import OWN, SHARED


def test_views_share_a_box_a_copy_gets_its_own_and_shared_memory_is_seen():
    base = torch.arange(6.0)
    message = torch.arange(4.0)
    before = tl.storage_places({"message": message})
    message.share_memory_()
    places = tl.storage_places({"base": base, "window": base[2:5], "copy": base.clone(), "message": message})
    assert [place.names for place in places] == [("base", "window"), ("copy",), ("message",)]
    assert [place.place for place in places] == [OWN, OWN, SHARED]
    assert places[0].nbytes == 24 and places[2].is_shared and not places[0].is_shared
    assert places[0].data_ptr == base.untyped_storage().data_ptr()
    # share_memory_() moved the storage: a new address, now in shared memory
    assert before[0].place == OWN and before[0].data_ptr != places[2].data_ptr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the memory map is read from /proc (Linux)")
def test_a_mapped_load_lives_in_its_file_and_a_plain_load_in_anonymous_memory(tmp_path):
    path = tmp_path / "small.pt"
    torch.save(nn.Linear(20, 50).state_dict(), path)
    read, mapped = torch.load(path), torch.load(path, mmap=True)
    places = tl.storage_places({"read": read["weight"], "mapped": mapped["weight"]})
    assert places[0].place == OWN and places[0].mapped_file is None
    assert places[1].place == "file small.pt, mapped" and places[1].mapped_file == "small.pt"


def test_a_saved_file_holds_one_record_per_storage_whole():
    base = torch.arange(10.0, 16.0)
    buffer = io.BytesIO()
    torch.save({"base": base, "window": base[2:5], "alone": base[2:5].clone()}, buffer)
    saved = tl.saved_file(buffer)
    assert saved.name == "in memory" and saved.nbytes == len(buffer.getvalue())
    assert sorted(size for _, size in saved.records) == [12, 24]  # the window's storage is base's, saved once
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as archive:
        assert len([n for n in archive.namelist() if "/data/" in n and not n.endswith(".pkl")]) == 2


def test_a_meta_tensor_has_no_memory_and_a_path_names_its_file(tmp_path):
    places = tl.storage_places({"w": torch.empty(3, device="meta")})
    assert places[0].place == "meta: no memory" and places[0].data_ptr == 0
    path = tmp_path / "t.pt"
    torch.save(torch.zeros(5), path)
    assert tl.saved_file(path).name == "t.pt" and tl.saved_file(str(path)).records[0][1] == 20
    assert tl.saved_file(os.fspath(path), "mine").name == "mine"


@pytest.mark.parametrize(
    ("call", "error", "named"),
    [
        (lambda: tl.storage_places([torch.zeros(1)]), TypeError, "tensors"),
        (lambda: tl.storage_places({}), ValueError, "tensors"),
        (lambda: tl.storage_places({"a": 3}), TypeError, "tensors"),
        (lambda: tl.saved_file(3), TypeError, "source"),
        (lambda: tl.saved_file(b"not a zip"), ValueError, "source"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(call, error, named):
    with pytest.raises(error, match=named):
        call()


def test_a_huge_tensor_is_placed_from_its_storage_alone():
    huge = torch.zeros(1).expand(10**8)  # 10^8 elements on a 4-byte storage
    (place,) = tl.storage_places({"huge": huge, "again": huge[5:]})
    assert place.names == ("huge", "again") and place.nbytes == 4
