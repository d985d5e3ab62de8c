"""labgrid drivers that put images on boards with flashpipe.

Load this file from a labgrid environment (``imports:``; see README.md
beside it). It registers:

FlashpipeDriver
    For a fastboot device: ``flash()`` sends a map of partitions to images
    with ``flashpipe flash`` (one read of each image, every part cut for
    the device's max-download-size, optional ``--verify``) and returns the
    ``--json`` report (docs/schema/flash-report.schema.json) as its result;
    ``call(...)`` (or calling the driver) runs ``flashpipe fastboot`` verbs (getvar, reboot,
    erase, oem, flashing ...). Binds to labgrid's fastboot resources (USB
    through ``usb:PATH``, UDP/TCP through ``AndroidNetFastboot``) or to a
    ``NetworkService`` naming a TCP fastboot daemon.

FlashpipeStorageDriver
    For a storage medium (labgrid's USB storage resources, SD muxes, or a
    ``FlashpipeBlockDevice``): ``write_image()`` runs ``flashpipe write``
    (sparse, raw or compressed images, a bmap found beside the image or
    given, a partition of the medium or an offset window, ``--verify``) and
    returns its ``--json`` report (docs/schema/write-report.schema.json).

FlashpipeBlockDevice
    A block device node on the machine running the test (a card reader that
    is not on USB, a loop device in a test): labgrid's ``USBMassStorage``
    finds a medium by its USB parent through udev, which such a node lacks.

A failure raises ``FlashpipeError`` (a labgrid ``ExecutionError``) whose
message is flashpipe's own and whose ``report`` is the parsed report, so a
test fails saying what flashpipe said. Works with labgrid 0.4.1 (Debian 12)
and with later releases, where some resources were renamed
(``AndroidFastboot`` -> ``AndroidUSBFastboot``, ``NetworkAndroidFastboot``
-> ``RemoteAndroidUSBFastboot``) and ``AndroidNetFastboot`` was added: the
drivers bind to whichever of those names the installed labgrid knows.
"""

import json
import logging
import os
import re
import shlex
import subprocess
import time

import attr

import labgrid.resource  # noqa: F401  (registers labgrid's resources before the bindings below are made)
from labgrid.driver.common import Driver
from labgrid.driver.exception import ExecutionError
from labgrid.factory import target_factory
from labgrid.resource.common import NetworkResource, Resource
from labgrid.step import step
from labgrid.util.managedfile import ManagedFile

__all__ = ["FlashpipeBlockDevice", "FlashpipeDriver", "FlashpipeError", "FlashpipeStorageDriver"]

# Resource names across labgrid releases (0.4.1 first, then the later names).
USB_FASTBOOT = ("AndroidFastboot", "AndroidUSBFastboot", "NetworkAndroidFastboot", "RemoteAndroidUSBFastboot")
NET_FASTBOOT = ("AndroidNetFastboot", "RemoteAndroidNetFastboot")
STORAGE = ("USBMassStorage", "NetworkUSBMassStorage", "USBSDMuxDevice", "NetworkUSBSDMuxDevice", "USBSDWireDevice",
           "NetworkUSBSDWireDevice", "USBSDWire3Device", "NetworkUSBSDWire3Device", "FlashpipeBlockDevice")


def _register(register, cls):
    """Registers cls unless a class of that name already is (the file imported twice)."""
    if cls.__name__ not in target_factory.all_classes:
        register(cls)
    return target_factory.all_classes[cls.__name__]


def _known(names):
    """The names this labgrid has classes for (a binding to an unknown name fails)."""
    return {n for n in names if n in target_factory.all_classes}


@attr.s(eq=False)
class FlashpipeError(ExecutionError):
    """flashpipe exited non-zero: msg is its own message; report its --json
    report (None when it printed none); returncode its exit status (1
    failed, 2 usage, 128+N killed or stopped by signal N)."""
    report = attr.ib(default=None)
    returncode = attr.ib(default=None)


class _Runner:
    """Runs flashpipe where the resource is (ssh for a remote one) and reads
    its --json report from stdout; its messages (stderr) go to the log."""

    def __init__(self, driver, resource):
        self.driver = driver
        self.resource = resource
        self.logger = logging.getLogger(f"{driver}:{driver.target}")
        tool = None
        if driver.target.env:
            tool = driver.target.env.config.get_tool("flashpipe")
        self.tool = tool or "flashpipe"

    def command(self, argv):
        prefix = list(self.resource.command_prefix)
        argv = [self.tool] + [str(a) for a in argv]
        # ssh hands its arguments to a shell on the other side as one line.
        return prefix + [shlex.join(argv)] if prefix else argv

    def run(self, argv, timeout=None):
        cmd = self.command(argv)
        self.logger.debug("running %s", shlex.join(cmd))
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                                  check=False)
        except subprocess.TimeoutExpired as e:
            raise FlashpipeError(f"flashpipe {argv[0]} did not finish in {timeout} s", report=None,
                                 returncode=None) from e
        except OSError as e:
            raise FlashpipeError(f"cannot run {self.tool}: {e}") from e
        for line in proc.stderr.splitlines():
            self.logger.info("%s", line)
        return proc

    def report(self, argv, timeout=None):
        """Runs a command with --json=- and returns its report; raises FlashpipeError on failure."""
        proc = self.run(argv + ["--json=-"], timeout)
        report = None
        try:
            report = json.loads(proc.stdout) if proc.stdout.strip() else None
        except ValueError:
            pass
        if proc.returncode != 0:
            raise FlashpipeError(_failure(argv[0], proc, report), stdout=proc.stdout.splitlines(),
                                 stderr=proc.stderr.splitlines(), report=report, returncode=proc.returncode)
        if not isinstance(report, dict):
            raise FlashpipeError(f"flashpipe {argv[0]} printed no report", stdout=proc.stdout.splitlines(),
                                 stderr=proc.stderr.splitlines(), returncode=proc.returncode)
        return report

    def help_json(self, command):
        proc = self.run([command, "--help-json"], timeout=30)
        try:
            return json.loads(proc.stdout)
        except ValueError:
            return {}


def _failure(command, proc, report):
    """flashpipe's own words for a failed run: the report's errors, else its last message line."""
    errors = []
    if isinstance(report, dict):
        for device in report.get("devices", []):  # flash
            if device.get("result") != "ok":
                errors.append(f"{device.get('device')}: {device.get('result')}: {device.get('error')}")
        if report.get("error"):  # write
            errors.append(report["error"])
    if not errors:
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        errors = lines[-1:] or [f"exit status {proc.returncode}"]
    return f"flashpipe {command} failed (exit {proc.returncode}): " + "; ".join(errors)


def _synced(path, resource):
    """The path of a local file where the resource is (copied over ssh to a remote exporter)."""
    mf = ManagedFile(path, resource)
    mf.sync_to_resource()
    return mf.get_remote_path()


@attr.s(eq=False)
class FlashpipeBlockDevice(Resource):
    """A block device node on this machine (path), for FlashpipeStorageDriver."""
    path = attr.ib(validator=attr.validators.instance_of(str))


FlashpipeBlockDevice = _register(target_factory.reg_resource, FlashpipeBlockDevice)


@attr.s(eq=False)
class FlashpipeDriver(Driver):
    """flashpipe flash / flashpipe fastboot for one fastboot device.

    flash_images: partition -> key of the environment's images (as
    AndroidFastbootDriver's). verify: compare every written range by digest
    or read-back (flash --verify). slot: a, b or other. timeout: seconds the device may
    stay silent mid-command (flash --timeout). retries: reconnect a device
    that went away, up to N times (flash --retry). protocol: tcp or udp, for
    a NetworkService. run_timeout: seconds the whole command may take.
    """
    bindings = {"fastboot": _known(USB_FASTBOOT + NET_FASTBOOT + ("NetworkService",))}

    flash_images = attr.ib(default=attr.Factory(dict), validator=attr.validators.instance_of(dict))
    verify = attr.ib(default=False, validator=attr.validators.instance_of(bool))
    slot = attr.ib(default=None, validator=attr.validators.optional(attr.validators.instance_of(str)))
    timeout = attr.ib(default=None, validator=attr.validators.optional(attr.validators.instance_of((int, float))))
    retries = attr.ib(default=0, validator=attr.validators.instance_of(int))
    protocol = attr.ib(default="tcp", validator=attr.validators.in_(["tcp", "udp"]))
    run_timeout = attr.ib(default=None, validator=attr.validators.optional(attr.validators.instance_of((int, float))))

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self._runner = None

    def on_activate(self):
        self._runner = _Runner(self, self.fastboot)

    def on_deactivate(self):
        self._runner = None

    @property
    def address(self):
        """The device as flashpipe's -s takes it: usb:PATH, tcp:HOST:PORT or udp:HOST:PORT."""
        res = self.fastboot
        name = type(res).__name__
        if name in USB_FASTBOOT:
            return f"usb:{res.path}"
        host = res.address
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        protocol = getattr(res, "protocol", None) if name in NET_FASTBOOT else self.protocol
        return f"{protocol}:{host}:{res.port}"

    def _image_paths(self, images):
        if images is None:
            if not self.flash_images:
                raise ExecutionError("FlashpipeDriver: no images given and no flash_images configured")
            images = {p: self.target.env.config.get_image_path(k) for p, k in self.flash_images.items()}
        return {p: _synced(path, self.fastboot) for p, path in images.items()}

    @Driver.check_active
    @step(args=["images"], result=True)
    def flash(self, images=None, verify=None, bmaps=None):
        """Flashes {partition: image path} (default: flash_images) in order and
        returns flashpipe's report; raises FlashpipeError when any step fails.
        bmaps: {partition: bmap path} for raw images."""
        paths = self._image_paths(images)
        argv = ["flash", "-s", self.address, "--no-progress"]
        if self.verify if verify is None else verify:
            argv.append("--verify")
        if self.slot:
            argv += ["--slot", self.slot]
        if self.timeout is not None:
            argv += ["--timeout", str(self.timeout)]
        if self.retries:
            argv += ["--retry", str(self.retries)]
        for part, bmap in (bmaps or {}).items():
            argv += ["--bmap", f"{part}={_synced(bmap, self.fastboot)}"]
        argv += [f"{p}={path}" for p, path in paths.items()]
        return self._runner.report(argv, self.run_timeout)

    @Driver.check_active
    @step()
    def flash_all(self):
        return self.flash()

    @Driver.check_active
    @step(title="fastboot", args=["args"], result=True)
    def call(self, *args):
        """Runs `flashpipe fastboot -s ADDRESS ARGS...` (the AOSP client's verbs
        and output) and returns what it printed; raises FlashpipeError on failure."""
        proc = self._runner.run(["fastboot", "-s", self.address] + list(args), self.run_timeout)
        if proc.returncode != 0:
            raise FlashpipeError(_failure("fastboot", proc, None), stdout=proc.stdout.splitlines(),
                                 stderr=proc.stderr.splitlines(), returncode=proc.returncode)
        return proc.stdout + proc.stderr

    def __call__(self, *args):
        return self.call(*args)

    @Driver.check_active
    @step(args=["var"], result=True)
    def getvar(self, var):
        """The value of `getvar VAR`."""
        values = [l.split(": ", 1)[1] for l in self.call("getvar", var).splitlines()
                  if l.startswith(f"{var}: ")]
        if len(values) != 1:
            raise ExecutionError(f"getvar {var}: expected one '{var}: ' line")
        return values[0]


FlashpipeDriver = _register(target_factory.reg_driver, FlashpipeDriver)


@attr.s(eq=False)
class FlashpipeStorageDriver(Driver):
    """flashpipe write onto a storage medium.

    image: key of the environment's images written by default. verify: read
    the medium back and compare (write --verify). run_timeout: seconds the
    whole write may take. The medium must show a size within 10 s (a card
    mux that just switched).
    """
    bindings = {"storage": _known(STORAGE)}

    image = attr.ib(default=None, validator=attr.validators.optional(attr.validators.instance_of(str)))
    verify = attr.ib(default=False, validator=attr.validators.instance_of(bool))
    run_timeout = attr.ib(default=None, validator=attr.validators.optional(attr.validators.instance_of((int, float))))

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        self._runner = None
        self._write_flags = None

    def on_activate(self):
        self._runner = _Runner(self, self.storage)

    def on_deactivate(self):
        self._runner = None

    def _remote(self, argv):
        prefix = list(self.storage.command_prefix)
        return subprocess.run(prefix + [shlex.join(argv)] if prefix else argv, capture_output=True, text=True,
                              check=False)

    def _has_write_flag(self, flag):
        """Whether this flashpipe's write takes `flag` (--offset and --size came with partition windows)."""
        if self._write_flags is None:
            self._write_flags = set(re.findall(r"--[a-z][a-z-]*", json.dumps(self._runner.help_json("write"))))
        return flag in self._write_flags

    @Driver.check_active
    @step(result=True)
    def get_size(self):
        """Bytes of the medium (0 while no medium is in)."""
        name = os.path.basename(os.path.realpath(self.storage.path)) if not isinstance(
            self.storage, NetworkResource) else os.path.basename(self.storage.path)
        out = self._remote(["cat", f"/sys/class/block/{name}/size"])
        if out.returncode != 0:
            raise ExecutionError(f"size of {self.storage.path}: {out.stderr.strip()}")
        return int(out.stdout.strip() or 0) * 512

    def _wait_for_medium(self):
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            try:
                if self.get_size() > 0:
                    return
            except ValueError:  # the sysfs attribute is empty for a moment while a medium appears
                pass
            time.sleep(0.5)
        raise ExecutionError(f"no medium in {self.storage.path} after 10 s")

    def _partition(self, partition):
        """(target path, offset, size) for a partition number or GPT name of the medium."""
        disk = self.storage.path
        if isinstance(partition, int):
            return f"{disk}{'p' if disk[-1].isdigit() else ''}{partition}", None, None
        out = self._remote(["sfdisk", "--json", disk])
        if out.returncode != 0:
            raise ExecutionError(f"partitions of {disk}: {out.stderr.strip()}")
        table = json.loads(out.stdout)["partitiontable"]
        sector = table.get("sectorsize", 512)
        for p in table.get("partitions", []):
            if p.get("name") == partition:
                if self._has_write_flag("--offset"):
                    return disk, p["start"] * sector, p["size"] * sector
                return p["node"], None, None
        raise ExecutionError(f"{disk} has no partition named '{partition}'")

    @Driver.check_active
    @step(args=["filename", "partition", "offset"], result=True)
    def write_image(self, filename=None, mode=None, partition=None, skip=0, seek=0, *, bmap=None, offset=None,
                    size=None, verify=None):
        """Writes an image to the medium, or to one of its partitions (a number:
        its node, as USBStorageDriver; a GPT name), or to the window of size
        bytes at offset (seek counts 512-byte blocks, as dd's). Returns the
        write report; raises FlashpipeError on failure.

        The image may be sparse, raw or compressed (gzip, xz, zstd, bzip2,
        lz4); flashpipe looks for a bmap beside it as bmaptool does, or takes
        bmap=PATH. mode="dd" (USBStorageDriver's Mode.DD) writes every block,
        ignoring any bmap. skip (of the input) is not supported."""
        if filename is None:
            if self.image is None:
                raise ExecutionError("FlashpipeStorageDriver: no filename and no image configured")
            filename = self.target.env.config.get_image_path(self.image)
        if skip:
            raise ExecutionError("FlashpipeStorageDriver: skip (of the input) is not supported")
        image = _synced(filename, self.storage)
        argv = ["write", "--progress", "none"]
        if str(mode) == "dd":
            argv.append("--no-bmap")
        elif bmap is not None:
            argv += ["--bmap", _synced(bmap, self.storage)]
        else:
            found = _bmap_beside(filename)
            if found and isinstance(self.storage, NetworkResource):
                argv += ["--bmap", _synced(found, self.storage)]
        if self.verify if verify is None else verify:
            argv.append("--verify")
        self._wait_for_medium()
        target = self.storage.path
        if partition is not None:
            target, offset, size = self._partition(partition)
        if seek:
            offset = (offset or 0) + seek * 512
        for flag, value in (("--offset", offset), ("--size", size)):
            if value is None:
                continue
            if not self._has_write_flag(flag):
                raise ExecutionError(f"this flashpipe's write has no {flag} (windows of a medium): "
                                     "give a partition number instead")
            argv += [flag, str(value)]
        return self._runner.report(argv + [image, target], self.run_timeout)


def _bmap_beside(image):
    """The bmap bmaptool would find beside a local image (IMAGE.bmap, then with each suffix removed)."""
    path = image
    while True:
        if os.path.exists(path + ".bmap"):
            return path + ".bmap"
        path, ext = os.path.splitext(path)
        if not ext:
            return None


FlashpipeStorageDriver = _register(target_factory.reg_driver, FlashpipeStorageDriver)
