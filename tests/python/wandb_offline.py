"""Reads back an offline W&B run (WANDB_MODE=offline): the records of its run-<id>.wandb file.

wandb 0.31 ships no Python reader of its own (the Go core writes the file), so this reads the format
directly: a 7-byte header (":W&B", magic, version), then 32 KiB blocks of LevelDB-log chunks (crc32,
length, type: full / first / middle / last), each record a wandb_internal_pb2.Record."""
import glob
import json
import struct
from pathlib import Path

BLOCK = 32768
HEADER = 7


def chunks(data: bytes):
    pos, pending = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # block trailer: padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if kind == 0 and length == 0:
            pos += left
            continue
        chunk = data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        if kind == 1:
            yield chunk
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            yield pending + chunk
            pending = b""


def records(path: Path):
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path}: not a .wandb file"
    for chunk in chunks(data):
        r = pb.Record()
        r.ParseFromString(chunk)
        yield r


class OfflineRun:
    """What one offline run logged: run metadata, history rows, the final summary, config, artifacts."""

    def __init__(self, wandb_dir: Path):
        [path] = glob.glob(str(wandb_dir / "wandb" / "offline-run-*" / "run-*.wandb"))
        self.run, self.history, self.summary, self.config, self.artifacts = None, [], {}, {}, []
        for r in records(Path(path)):
            kind = r.WhichOneof("record_type")
            if kind == "run":
                self.run = r.run
            elif kind == "history":
                self.history.append({item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in r.history.item})
            elif kind == "summary":
                for item in r.summary.update:
                    self.summary[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
            elif kind == "config":
                for item in r.config.update:
                    self.config[item.key] = json.loads(item.value_json)
            elif kind == "artifact":
                self.artifacts.append(r.artifact)
