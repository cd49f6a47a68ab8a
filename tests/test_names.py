"""names_snapshot against torch: id(), the version counter and the storage's data pointer, size and bytes."""

import pytest
import torch

import tutorial_lib as tl


def test_a_snapshot_records_what_torch_says_of_each_name():
    x = torch.arange(4.0)
    v = x.view(2, 2)
    snap = tl.names_snapshot({"x": x, "x.view(2, 2)": v})
    (_, rx), (_, rv) = snap.names
    assert rx.object_id == id(x) and rv.object_id == id(v) and rx.object_id != rv.object_id
    assert rx.storage.data_ptr == rv.storage.data_ptr == x.untyped_storage().data_ptr()
    assert rx.storage.nbytes == 16 and rx.storage.values == ("0", "1", "2", "3") and rx.version == x._version
    assert len(snap.objects()) == 2 and len(snap.storages()) == 1  # two objects, one storage
    with pytest.raises(TypeError, match="y"):
        tl.names_snapshot(y=[1, 2])
    with pytest.raises(ValueError, match="at least one"):
        tl.names_snapshot()
    with pytest.raises(ValueError, match="twice"):
        tl.names_snapshot({"x": x}, x=x)


def test_a_write_in_place_changes_the_digest_and_the_version_but_not_the_address():
    y = torch.ones(3)
    before = tl.names_snapshot(y=y)
    y += 1
    after = tl.names_snapshot(y=y)
    (_, old), (_, new) = before.names[0], after.names[0]
    assert old.object_id == new.object_id and old.storage.key == new.storage.key
    assert old.storage.digest != new.storage.digest and (old.version, new.version) == (0, 1)
    big = tl.names_snapshot(b=torch.zeros(2**20))  # 4 MiB: past DIGEST_BYTES, no digest
    assert big.names[0][1].storage.digest is None and big.names[0][1].storage.values == ("0", "0", "0", "0")
