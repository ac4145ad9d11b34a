

def test_one_age_formatter_for_cli_fleet_and_dashboard() -> None:
    from memdeck.core.text import age_words

    assert [age_words(s) for s in (None, -5, 59, 60, 3599, 3600, 47 * 3600 + 3599, 48 * 3600, 5 * 86400 + 1)] == [
        "?", "now", "now", "1 min", "59 min", "1 h", "47 h", "2 d", "5 d"]
