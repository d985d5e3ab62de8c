"""Flashes a board through flashpipe's labgrid drivers (env.yaml beside this
file) and checks what landed with tools other than flashpipe: simg2img for
sparse images, sfdisk for where partitions are, plain reads of the media.

LG_SERVE_DISK names the disk behind the fastboot daemon (the test runs the
daemon beside pytest, so it can look at its storage); LG_STORAGE is the
block device of the storage target."""
import json
import os
import subprocess

import pytest


def partition(disk, name):
    """(offset, size) in bytes of the GPT partition called name, from sfdisk."""
    table = json.loads(subprocess.check_output(["sfdisk", "--json", disk]))["partitiontable"]
    sector = table.get("sectorsize", 512)
    for p in table["partitions"]:
        if p.get("name") == name:
            return p["start"] * sector, p["size"] * sector
    raise AssertionError(f"{disk} has no partition {name}")


def read(path, offset, size):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(size)


def expanded(env, key, tmp_path):
    """The raw bytes of a sparse image of the environment, by simg2img."""
    out = tmp_path / (key + ".raw")
    subprocess.check_call(["simg2img", env.config.get_image_path(key), str(out)])
    return out.read_bytes()


@pytest.fixture(scope="module")
def fastboot(target):
    driver = target.get_driver("FlashpipeDriver")
    target.activate(driver)
    return driver


@pytest.fixture(scope="module")
def storage(target):
    driver = target.get_driver("FlashpipeStorageDriver")
    target.activate(driver)
    return driver


def test_fastboot_flash_map_of_partitions(env, fastboot, tmp_path):
    report = fastboot.flash()
    assert (report["schema"], report["ok"], report["failed"]) == ("flashpipe-flash", 1, 0), report
    device = report["devices"][0]
    assert device["written"] == ["boot", "system"], device
    assert [s["verify"] for s in device["steps"]] == ["ok", "ok"], device["steps"]
    disk = os.environ["LG_SERVE_DISK"]
    boot = open(env.config.get_image_path("boot"), "rb").read()
    assert read(disk, partition(disk, "boot")[0], len(boot)) == boot
    system = expanded(env, "system", tmp_path)
    assert read(disk, partition(disk, "system")[0], len(system)) == system
    assert fastboot.getvar("product") == "flashpipe"


def test_storage_sparse_image_to_named_partition(env, storage, tmp_path):
    report = storage.write_image(partition="rootfs")
    assert (report["schema"], report["ok"], report["verify"]) == ("flashpipe-write", True, "passed"), report
    assert report["kind"] == "sparse", report
    rootfs = expanded(env, "rootfs", tmp_path)
    disk = os.environ["LG_STORAGE"]
    assert read(disk, partition(disk, "rootfs")[0], len(rootfs)) == rootfs


def test_storage_compressed_image_with_bmap_to_partition_number(env, storage):
    image = env.config.get_image_path("firmware")
    report = storage.write_image(image, partition=1)
    assert report["ok"] and report["bmap_found"] and report["kind"].startswith("xz+"), report
    assert report["bytes_skipped"] > 0, "the bmap's unmapped blocks were written"
    raw = subprocess.check_output(["xz", "-dc", image])
    disk = os.environ["LG_STORAGE"]
    assert read(disk, partition(disk, "firmware")[0], len(raw)) == raw
