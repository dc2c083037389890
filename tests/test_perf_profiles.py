"""Hardware profiles: the registered files load, malformed ones are rejected with file and key,
detection picks the right profile from (fake) device properties."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infralab.errors import CourseError
from infralab.perf.profiles import DeviceInfo, detect, load_profile, load_profiles, parse_profile

ROOT = Path(__file__).resolve().parents[1]
PROFILES = load_profiles(ROOT / "hardware_profiles")


def test_every_registered_profile_loads_and_says_whether_it_was_calibrated():
    assert {"h200", "h100", "a100_sxm", "a100_pcie", "l4", "l40s", "rtx4090", "b200", "cpu"} <= set(PROFILES)
    assert PROFILES["h200"].calibrated and PROFILES["h200"].status == "calibrated"
    for name in ("h100", "a100_sxm", "a100_pcie", "l4", "l40s", "rtx4090", "b200"):
        assert PROFILES[name].status == "provisional", name
    assert not PROFILES["cpu"].runs_perf


def test_measured_ceilings_stay_below_the_datasheet_peaks():
    for p in PROFILES.values():
        if p.runs_perf:
            assert p.ceilings["copy_gbps"] <= p.peaks["bandwidth_gbps"], p.name
            assert p.ceilings["matmul_bf16_tflops"] <= p.peaks["bf16_tflops"], p.name


def _h200_data() -> dict:
    return yaml.safe_load((ROOT / "hardware_profiles" / "h200.yml").read_text())


@pytest.mark.parametrize("mutate, key", [
    (lambda d: d.pop("calibrated"), "calibrated"),
    (lambda d: d["ceilings"].pop("copy_gbps"), "ceilings.copy_gbps"),
    (lambda d: d["ceilings"].update(copy_gbps="fast"), "ceilings.copy_gbps"),
    (lambda d: d["ceilings"].update(copy_gbps=9000), "ceilings.copy_gbps"),  # above 1.05x the datasheet peak
    (lambda d: d["identity"].update(compute_capability=[9]), "identity.compute_capability"),
    (lambda d: d["identity"].update(name_patterns=["H2(00"]), "identity.name_patterns[0]"),
    (lambda d: d["identity"].update(form_factor="socket"), "identity.form_factor"),
    (lambda d: d["identity"].update(memory_gib=[150, 130]), "identity.memory_gib"),
    (lambda d: d["peaks"].update(bf16_tflops=-1), "peaks.bf16_tflops"),
    (lambda d: d.update(name="h100"), "name"),  # must match the file's stem
    (lambda d: d["measured"].pop("torch"), "measured.torch"),  # a calibrated profile names its versions
    (lambda d: d.update(colour="green"), "colour"),
])
def test_a_malformed_profile_is_rejected_naming_the_file_and_the_key(mutate, key):
    data = _h200_data()
    mutate(data)
    with pytest.raises(CourseError) as e:
        parse_profile(Path("hardware_profiles/h200.yml"), data)
    assert e.value.key == key
    assert "h200.yml" in str(e.value)


def test_invalid_yaml_names_the_file(tmp_path):
    f = tmp_path / "broken.yml"
    f.write_text("name: [unclosed\n")
    with pytest.raises(CourseError, match="broken.yml"):
        load_profile(f)


def _dev(name, cc, mem):
    return DeviceInfo(name=name, capability=cc, memory_gib=mem)


@pytest.mark.parametrize("dev, expected", [
    (_dev("NVIDIA H200", (9, 0), 139.8), "h200"),
    (_dev("NVIDIA H100 80GB HBM3", (9, 0), 79.1), "h100"),
    (_dev("NVIDIA A100-SXM4-80GB", (8, 0), 79.2), "a100_sxm"),
    (_dev("NVIDIA A100 80GB PCIe", (8, 0), 79.2), "a100_pcie"),  # same chip, keyed on form factor
    (_dev("NVIDIA L4", (8, 9), 22.0), "l4"),
    (_dev("NVIDIA L40S", (8, 9), 44.4), "l40s"),
    (_dev("NVIDIA GeForce RTX 4090", (8, 9), 23.6), "rtx4090"),
    (_dev("NVIDIA B200", (10, 0), 178.4), "b200"),
])
def test_detection_picks_the_profile_from_device_name_capability_and_memory(dev, expected):
    profile, reason = detect(PROFILES, dev)
    assert profile is not None and profile.name == expected, reason


@pytest.mark.parametrize("dev", [
    _dev("NVIDIA H100 PCIe", (9, 0), 79.1),  # another bandwidth: not the SXM profile
    _dev("NVIDIA H200", (9, 0), 70.0),  # a MIG slice or a different part: memory does not fit
    _dev("NVIDIA H200", (8, 0), 139.8),  # capability does not fit
    _dev("NVIDIA GeForce RTX 3090", (8, 6), 23.6),
])
def test_an_unregistered_gpu_gets_no_profile_and_is_told_to_calibrate(dev):
    profile, reason = detect(PROFILES, dev)
    assert profile is None
    assert "infralab profile calibrate" in reason


def test_without_a_gpu_the_cpu_profile_runs_no_challenge():
    profile, reason = detect(PROFILES, None)
    assert profile is not None and profile.name == "cpu" and not profile.runs_perf
    assert "no CUDA GPU" in reason


def test_a_calibrated_profile_written_by_calibrate_loads_back(tmp_path, monkeypatch):
    from infralab.perf import calibrate
    monkeypatch.setattr(calibrate, "current_device", lambda: _dev("NVIDIA Fancy X1 PCIe", (9, 0), 96.0))
    version = type("TorchVersion", (str,), {})("2.11.0+cu130")  # torch.__version__ is a str subclass
    monkeypatch.setattr(calibrate, "gpu_environment", lambda: {"torch": version, "triton": "3.6.0", "cuda": "13.0",
                                                               "driver": "580", "clocks": {"sm": "1980 MHz"}})
    measured = {"ceilings": {"copy_gbps": 3000.0, "read_gbps": 3100.0, "matmul_bf16_tflops": 600.0,
                             "matmul_fp16_tflops": 580.0}, "details": {"copy": "2 GiB"}}
    data = calibrate.profile_data(measured, name=None, base=None)
    path = tmp_path / f"{data['name']}.yml"
    calibrate.write_profile(path, data)
    prof = load_profile(path)
    assert prof.calibrated and prof.name == "fancy_x1_pcie" and prof.form_factor == "pcie"
    assert prof.ceilings["copy_gbps"] == 3000.0
    assert "peaks_source" in prof.measured  # no datasheet given: the stand-in peaks say so
    assert detect({prof.name: prof}, _dev("NVIDIA Fancy X1 PCIe", (9, 0), 96.0))[0] is prof
