"""A minimal out-of-tree platform: enough for vLLM to build and run its argument parser."""

from __future__ import annotations

from vllm.platforms.interface import Platform, PlatformEnum


class ParseOnlyPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name = "cpu"
    device_type = "cpu"
    dispatch_key = "CPU"
