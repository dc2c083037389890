"""The message catalogue: every key in both languages, with the same fields; language choice."""
import re

import pytest

from infralab import i18n

CJK = re.compile(r"[\u4e00-\u9fff]")


def test_every_message_has_english_and_chinese_with_the_same_fields():
    problems = []
    for key, texts in i18n.catalog().items():
        if not (isinstance(texts, tuple) and len(texts) == 2 and all(isinstance(t, str) and t.strip() for t in texts)):
            problems.append(f"{key}: expected (english, chinese), got {texts!r}")
            continue
        en, zh = texts
        if not CJK.search(zh):
            problems.append(f"{key}: the Chinese text has no Chinese: {zh!r}")
        if i18n.fields(en) != i18n.fields(zh):
            problems.append(f"{key}: fields differ: {sorted(i18n.fields(en))} vs {sorted(i18n.fields(zh))}")
    assert not problems, "\n".join(problems)


def test_language_comes_from_the_option_then_the_environment_then_the_locale(monkeypatch):
    for var in ("INFRALAB_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(var, raising=False)
    assert i18n.language() == "en"
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert i18n.language() == "zh"
    monkeypatch.setenv("INFRALAB_LANG", "en")
    assert i18n.language() == "en"
    assert i18n.set_language("zh") == "zh"
    assert i18n.tr("core.looks_like", diagnosis="x") == "看起来像：x"
    assert i18n.tr("core.looks_like", "en", diagnosis="x") == "This looks like: x"
    with pytest.raises(ValueError):
        i18n.set_language("fr")


def test_a_message_may_have_a_field_named_key_or_lang_or_condition():
    """``tr`` and ``expect`` take their own arguments by position only, so no field name clashes with them."""
    from infralab.testing import Mismatch, expect
    assert i18n.tr("check.value", "en", what="x", got=1, expected=2, key=3, lang=4)
    with pytest.raises(Mismatch):
        expect(False, "check.value", what="x", got=1, expected=2, key=3, condition=4)
