"""Resumable, checksummed downloads into the dataset cache."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from hebench.data.cache import CARDS, cache_dir, card
from hebench.errors import DatasetError

Progress = Callable[[int, int | None], None]  # (bytes so far, total or None)
CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    return digest_of(path, "sha256")


def digest_of(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def checksum_of(path: Path, expected: str) -> str:
    """``path``'s digest in the algorithm of ``expected``: SHA-256 (64 hex digits), or MD5 (32) where a source
    publishes only that (LEAF's Shakespeare edition)."""
    return digest_of(path, "md5" if len(expected) == 32 else "sha256")


def card_checksum(entry: dict) -> str:
    """The checksum a card pins for one file: its ``sha256``, else its ``md5``."""
    return str(entry.get("sha256") or entry["md5"])


def download(url: str, dest: Path, sha256: str, progress: Progress | None = None, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest``, resuming a ``.part`` file with an HTTP Range request; ``sha256`` is the
    expected checksum (an MD5 of 32 hex digits is accepted where a card pins only that)."""
    if dest.exists() and checksum_of(dest, sha256) == sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            resumed = response.status == 206
            total = response.length + (have if resumed else 0) if response.length is not None else None
            mode = "ab" if resumed else "wb"
            done = have if resumed else 0
            with part.open(mode) as fh:
                for block in iter(lambda: response.read(CHUNK), b""):
                    fh.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        raise DatasetError(
            f"download of {url} failed: {err} ({part.stat().st_size if part.exists() else 0} bytes kept for resuming)",
            "check the network and run the same command again to resume, or pass --path to a local copy",
        ) from None
    actual = checksum_of(part, sha256)
    if actual != sha256:
        part.unlink()
        raise DatasetError(
            f"checksum mismatch for {url}: got {actual}, expected {sha256}",
            "the download was damaged or the source changed; run again, or pass --path to a verified copy",
        )
    part.replace(dest)
    return dest


def extract_tar(archive: Path, into: Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")


def fetch(name: str, path: Path | None = None, progress: Progress | None = None, base_url: str | None = None) -> Path:
    """Make dataset ``name`` present in the cache and return its folder.

    ``path`` uses a local copy instead (a folder is linked in, an archive is
    checked against the card's checksum and extracted). ``base_url`` replaces
    the card's host (mirrors, tests).
    """
    spec = fetchable(name, path)
    target = cache_dir() / name
    target.mkdir(parents=True, exist_ok=True)
    for entry in spec.get("files", []):
        filename = entry["url"].rsplit("/", 1)[-1]
        archive = target / filename
        if path is not None and Path(path).is_dir():
            _link_folder(Path(path), target)
            return target
        if path is not None:
            if checksum_of(Path(path), card_checksum(entry)) != card_checksum(entry):
                raise DatasetError(
                    f"{path} does not match the checksum of {filename} ({card_checksum(entry)})",
                    f"pass the original file the card datasets/{name}.yaml names, unchanged",
                )
            shutil.copyfile(path, archive)
        else:
            url = f"{base_url.rstrip('/')}/{filename}" if base_url else entry["url"]
            download(url, archive, card_checksum(entry), progress)
        if entry.get("extract") == "tar":
            extract_tar(archive, target)
    return target


def fetchable(name: str, path: Path | None = None) -> dict:
    """The card of a dataset ``fetch`` can get (from ``path`` when given); otherwise a :class:`DatasetError`
    saying why not and how that dataset is obtained."""
    if name in ("digits", "natural"):
        raise DatasetError(
            f"{name} ships with scikit-learn: there is nothing to fetch", f"use it as is (data.dataset: {name})"
        )
    through_torchvision = (card("torchvision").get("datasets") or {}) if (CARDS / "torchvision.yaml").is_file() else {}
    if name in through_torchvision:
        cls = through_torchvision[name].get("class", name)
        raise DatasetError(
            f"{name} is loaded through torchvision when a suite runs, not fetched by this command",
            f"run the suite with --set data.download=true where the network allows, or --set data.path=DIR "
            f"for a folder that holds torchvision's {cls} files",
        )
    if not (CARDS / f"{name}.yaml").is_file():
        raise DatasetError(
            f"no dataset '{name}' to fetch: this command downloads femnist, tiny-shakespeare and shakespeare",
            "`hebench datasets list` shows every dataset and how to get it",
        )
    spec = card(name)
    if not spec.get("files"):
        raise DatasetError(f"{name} has nothing to download", "`hebench datasets list` says how to get it")
    if path is not None and not Path(path).exists():
        archives = ", ".join(e["url"].rsplit("/", 1)[-1] for e in spec["files"])
        raise DatasetError(
            f"--path {path} does not exist",
            f"pass the folder of a local {name} copy, or the original file ({archives})",
        )
    return spec


def _link_folder(source: Path, target: Path) -> None:
    """Point the cache at a local copy without copying it."""
    marker = target / "LOCAL_PATH"
    marker.write_text(str(source.resolve()))


def resolve(name: str, override: Path | None = None) -> Path | None:
    """Folder holding dataset ``name``: the override, a linked local copy, or the cache."""
    if override is not None:
        return Path(override)
    target = cache_dir() / name
    marker = target / "LOCAL_PATH"
    if marker.is_file():
        return Path(marker.read_text().strip())
    return target if target.is_dir() and any(target.iterdir()) else None
