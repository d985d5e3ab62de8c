#!/usr/bin/env python3
"""An independent reader of Android liblp ("super") metadata, for the tests.

Written from the published format (AOSP fs_mgr/liblp metadata_format.h:
LpMetadataGeometry, LpMetadataHeader, the four tables), not from flashpipe's
C++, so that what `flashpipe lp make` writes is checked by a second reading.

  lp_reader.py json SUPER [--empty] [--slot N]   print the metadata as JSON
  lp_reader.py extract SUPER NAME OUT [--slot N] write partition NAME to OUT
  lp_reader.py check SUPER [--empty]             every copy valid and equal,
                                                 extents inside the device,
                                                 aligned, no overlap

SUPER is a raw super image; --empty reads a super_empty.img (geometry at
byte 0, one metadata copy at 4096). Exits 1 with a message on any violation.
"""
import hashlib
import json
import struct
import sys

GEOMETRY_MAGIC = 0x616C4467
HEADER_MAGIC = 0x414C5030
RESERVED = 4096
GEOMETRY_BLOCK = 4096
SECTOR = 512


class Bad(Exception):
    pass


def sha256_zeroed(blob, start, end):
    """SHA-256 of blob with blob[start:end] taken as zeros."""
    return hashlib.sha256(blob[:start] + bytes(end - start) + blob[end:]).digest()


def parse_geometry(block):
    # magic, struct_size, checksum[32], metadata_max_size, slot_count, logical_block_size
    magic, struct_size = struct.unpack_from("<II", block, 0)
    if magic != GEOMETRY_MAGIC:
        raise Bad("geometry magic %#x" % magic)
    if struct_size != 52:
        raise Bad("geometry struct_size %d" % struct_size)
    checksum = block[8:40]
    if sha256_zeroed(block[:52], 8, 40) != checksum:
        raise Bad("geometry checksum")
    max_size, slots, lbs = struct.unpack_from("<III", block, 40)
    if slots == 0 or max_size % SECTOR or lbs % SECTOR or lbs == 0:
        raise Bad("geometry values %d %d %d" % (max_size, slots, lbs))
    return {"metadata_max_size": max_size, "metadata_slot_count": slots, "logical_block_size": lbs}


def cstr(raw):
    return raw.split(b"\0", 1)[0].decode("ascii")


TABLES = [  # name, descriptor offset in the header, entry size
    ("partitions", 80, 52),
    ("extents", 92, 24),
    ("groups", 104, 48),
    ("block_devices", 116, 64),
]


def parse_metadata(buf, geometry):
    magic, major, minor, header_size = struct.unpack_from("<IHHI", buf, 0)
    if magic != HEADER_MAGIC:
        raise Bad("header magic %#x" % magic)
    if major != 10 or minor > 2:
        raise Bad("version %d.%d" % (major, minor))
    if header_size != (256 if minor >= 2 else 128):
        raise Bad("header_size %d for 10.%d" % (header_size, minor))
    header = buf[:header_size]
    if sha256_zeroed(header, 12, 44) != header[12:44]:
        raise Bad("header checksum")
    tables_size = struct.unpack_from("<I", header, 44)[0]
    if header_size + tables_size > geometry["metadata_max_size"]:
        raise Bad("metadata larger than a slot")
    tables = buf[header_size:header_size + tables_size]
    if len(tables) != tables_size or hashlib.sha256(tables).digest() != header[48:80]:
        raise Bad("tables checksum")
    out = {"minor_version": minor, "header_size": header_size, "tables_size": tables_size,
           "flags": struct.unpack_from("<I", header, 128)[0] if header_size == 256 else 0}
    for name, at, size in TABLES:
        off, count, entry = struct.unpack_from("<III", header, at)
        if entry != size or off + count * entry > tables_size:
            raise Bad("%s table bounds" % name)
        out[name] = [tables[off + i * entry: off + (i + 1) * entry] for i in range(count)]
    out["partitions"] = [dict(zip(("attributes", "first_extent", "num_extents", "group"),
                                  struct.unpack_from("<IIII", e, 36)), name=cstr(e[:36])) for e in out["partitions"]]
    out["extents"] = [dict(zip(("num_sectors", "target_type", "target_data", "target_source"),
                               struct.unpack_from("<QIQI", e, 0))) for e in out["extents"]]
    out["groups"] = [{"name": cstr(e[:36]), "flags": struct.unpack_from("<I", e, 36)[0],
                      "maximum_size": struct.unpack_from("<Q", e, 40)[0]} for e in out["groups"]]
    out["block_devices"] = [dict(zip(("first_logical_sector", "alignment", "alignment_offset", "size"),
                                     struct.unpack_from("<QIIQ", e, 0)), name=cstr(e[24:60]),
                                 flags=struct.unpack_from("<I", e, 60)[0]) for e in out["block_devices"]]
    for p in out["partitions"]:
        if p["first_extent"] + p["num_extents"] > len(out["extents"]) or p["group"] >= len(out["groups"]):
            raise Bad("partition %s indices" % p["name"])
    for e in out["extents"]:
        if e["target_type"] == 0 and e["target_source"] >= len(out["block_devices"]):
            raise Bad("extent block device")
    return out


def copy_offsets(geometry, slot):
    base = RESERVED + 2 * GEOMETRY_BLOCK
    m, n = geometry["metadata_max_size"], geometry["metadata_slot_count"]
    return base + m * slot, base + m * (n + slot)


def read_super(path, slot, empty):
    with open(path, "rb") as f:
        data = f.read(1 << 26)  # the metadata area is at the start
    if empty:
        geometry = parse_geometry(data[0:GEOMETRY_BLOCK])
        return geometry, parse_metadata(data[GEOMETRY_BLOCK:], geometry), []
    primary = parse_geometry(data[RESERVED:RESERVED + GEOMETRY_BLOCK])
    backup = parse_geometry(data[RESERVED + GEOMETRY_BLOCK:RESERVED + 2 * GEOMETRY_BLOCK])
    if primary != backup:
        raise Bad("geometry copies differ")
    copies = []
    for off in copy_offsets(primary, slot):
        copies.append(parse_metadata(data[off:off + primary["metadata_max_size"]], primary))
    return primary, copies[0], copies


def check(path, empty):
    geometry, m, _ = read_super(path, 0, empty)
    if not empty:
        for slot in range(geometry["metadata_slot_count"]):
            _, first, copies = read_super(path, slot, empty)
            if any(c != first for c in copies):
                raise Bad("slot %d copies differ" % slot)
    dev = m["block_devices"][0]
    area = RESERVED + 2 * (GEOMETRY_BLOCK + geometry["metadata_max_size"] * geometry["metadata_slot_count"])
    if dev["first_logical_sector"] * SECTOR < area:
        raise Bad("partitions overlap the metadata area")
    used = []
    for p in m["partitions"]:
        for e in m["extents"][p["first_extent"]:p["first_extent"] + p["num_extents"]]:
            start, end = e["target_data"], e["target_data"] + e["num_sectors"]
            if start < dev["first_logical_sector"] or end * SECTOR > dev["size"]:
                raise Bad("%s extent outside the device" % p["name"])
            align = dev["alignment"] or geometry["logical_block_size"]
            if (start * SECTOR - dev["alignment_offset"]) % align:
                raise Bad("%s extent at sector %d not aligned to %d" % (p["name"], start, align))
            if (e["num_sectors"] * SECTOR) % geometry["logical_block_size"]:
                raise Bad("%s extent not whole logical blocks" % p["name"])
            used.append((start, end, p["name"]))
    used.sort()
    for a, b in zip(used, used[1:]):
        if b[0] < a[1]:
            raise Bad("%s and %s overlap" % (a[2], b[2]))
    for g_index, g in enumerate(m["groups"]):
        total = sum(e["num_sectors"] * SECTOR for p in m["partitions"] if p["group"] == g_index
                    for e in m["extents"][p["first_extent"]:p["first_extent"] + p["num_extents"]])
        if g["maximum_size"] and total > g["maximum_size"]:
            raise Bad("group %s over its maximum" % g["name"])


def extract(path, name, out, slot):
    _, m, _ = read_super(path, slot, False)
    part = [p for p in m["partitions"] if p["name"] == name]
    if not part:
        raise Bad("no partition %s" % name)
    p = part[0]
    with open(path, "rb") as f, open(out, "wb") as o:
        for e in m["extents"][p["first_extent"]:p["first_extent"] + p["num_extents"]]:
            length = e["num_sectors"] * SECTOR
            if e["target_type"] == 1:
                o.write(bytes(length))
                continue
            f.seek(e["target_data"] * SECTOR)
            while length:
                chunk = f.read(min(length, 1 << 20))
                if not chunk:
                    raise Bad("super ends inside %s" % name)
                o.write(chunk)
                length -= len(chunk)


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    empty = "--empty" in argv
    slot = 0
    for a in argv:
        if a.startswith("--slot="):
            slot = int(a.split("=", 1)[1])
    try:
        if args[0] == "json":
            geometry, m, _ = read_super(args[1], slot, empty)
            m["geometry"] = geometry
            print(json.dumps(m, indent=1, sort_keys=True))
        elif args[0] == "check":
            check(args[1], empty)
        elif args[0] == "extract":
            extract(args[1], args[2], args[3], slot)
        else:
            raise Bad("unknown command %s" % args[0])
    except Bad as e:
        print("lp_reader: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
