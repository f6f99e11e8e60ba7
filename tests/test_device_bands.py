"""The device-level band is a band (issue 10, [D-SLACK], P-CALIBRATE): for every stage of every bundled example
(and every real config when ../shared is present), with the model's own slack and with each kind of calibrated
slack term, the low end ≤ the nominal ≤ the high end, for the allocator's peak and the device's, and the device
holds at least what the allocator reserves, which is at least what the tensors hold. A calibrated static pool's
band once lay wholly above its nominal (P-CALIBRATE)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_session import config_sets, opened_plan

from estimator.errors import SappError
from estimator.estimate import estimate

CALIBRATIONS = ({}, {"allocator_slack_factor": 1.4}, {"allocator_slack_fraction": 0.05},
                {"allocator_slack_factor": 0.6, "allocator_slack_fraction": 0.02})
BUNDLED = [(name, files, args) for name, files, args in config_sets(None)]


def _check(files: list[Path], args: dict) -> int:
    p = opened_plan(files, args)
    if p is None:
        return 0  # a config the session refuses to open is another test's subject
    checked = 0
    for terms in CALIBRATIONS:
        try:
            result = estimate(p.model, p.strategy, p.hardware, p.options.replace(**terms))
        except SappError:
            continue  # refused plans (validator rules) have no stages to check
        for s in result.stages:
            assert s.allocator_peak_low <= s.allocator_peak <= s.allocator_peak_high, (terms, s.index)
            assert s.device_peak_low <= s.device_peak <= s.device_peak_high, (terms, s.index)
            assert s.tensor_peak <= s.allocator_peak <= s.device_peak, (terms, s.index)
            checked += 1
    return checked


@pytest.mark.parametrize("name,files,args", BUNDLED, ids=[b[0] for b in BUNDLED])
def test_every_bundled_examples_band_holds_its_nominal(name: str, files: list[Path], args: dict) -> None:
    assert _check(files, args) > 0, name


def test_every_real_configs_band_holds_its_nominal(shared_dir: Path) -> None:
    bundled = {b[0] for b in BUNDLED}
    checked = [_check(files, args) for name, files, args in config_sets(shared_dir) if name not in bundled]
    assert len(checked) >= 60 and sum(checked) > 800, (len(checked), sum(checked))  # 64 configs, ~1,000 checks
