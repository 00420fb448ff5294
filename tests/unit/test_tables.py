"""rcakit.tables: what a reader sees of a table (the links and labels a formatter must not break)."""

from __future__ import annotations

import pandas as pd

from rcakit import tables


def test_a_row_label_that_is_a_link_keeps_its_target_and_only_its_text_reads_in_words():
    frame = pd.DataFrame(
        {"mechanism_claims": [3, 12]},
        index=['<a href="car_shapley.html">car_shapley</a>', '<a href="gcjr_ablations.html#beside">x_y</a>'],
    )
    html = tables.format_table(frame, escape=False).to_html()
    assert 'href="car_shapley.html"' in html and 'href="gcjr_ablations.html#beside"' in html
    assert ">car shapley</a>" in html and ">x y</a>" in html and "mechanism claims" in html


def test_column_label_keeps_math_and_tags_verbatim_and_words_the_rest():
    label = r'<span class="k_v">phi_0</span> \(\phi_0\) and $v_{S}$'
    assert tables.column_label(label) == r'<span class="k_v">phi 0</span> \(\phi_0\) and $v_{S}$'
