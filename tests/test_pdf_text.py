"""The PDF checks read a sentence across a page break as the site shows it (tests/pdf_text.py)."""

from pdf_text import body_lines, body_text, glued_in

HEAD = "Roofline Book, 发行版本 0.1.0"


def test_a_glued_number_split_by_a_page_break_reads_as_one():
    # The sentence 「（FP32 10.2 GFLOP/s，BF16 4.7 GFLOP/s）」 breaks after BF16; the reader
    # returned page 53 with a blank line after its foot and page 54 with one before its head.
    page_53 = [
        HEAD,
        "在这台机器上，向量单元的速率",
        "（FP32 10.2 GFLOP/s，BF16",
        "9.4. 在这台机器上实测 53",
        " ",
    ]
    page_54 = ["", HEAD, "4.7 GFLOP/s）。", "9.4. 在这台机器上实测 54"]
    text = body_text([(page_53, "53"), (page_54, "54")])
    assert "BF164.7GFLOP/s" in text
    assert "Roofline" not in text and "实测53" not in text and "实测54" not in text


def test_a_foot_read_before_the_last_line_is_still_taken_out():
    page = [HEAD, "正文第一行", "9.4. 在这台机器上实测 53", "正文最后一行"]
    assert body_lines(page, "53") == ["正文第一行", "正文最后一行"]


def test_a_chapter_page_loses_its_lone_label_but_the_body_keeps_its_numbers():
    # a chapter's first page has no head, and its foot is the label alone
    page = ["第 2 章", "表中的一格", "2", "表格最后一行", "2"]
    assert body_lines(page, "2") == ["第 2 章", "表中的一格", "2", "表格最后一行"]


def test_a_line_that_only_ends_in_another_pages_number_stays():
    page = [HEAD, "9.4. 在这台机器上实测 53", "1.2. 一节的标题 7"]
    assert body_lines(page, "53") == ["1.2. 一节的标题 7"]


def test_a_float_inside_a_sentence_leaves_the_value_beside_its_other_words():
    # 「……放在一起，交点在 6.6 到 16.1 之间」: a figure's caption floated between 一 and 起
    text = "四分位距放在一图11.3两条竖线分别是交点。起,交点在6.6到16.1之间"
    assert glued_in(text, "放在一起,交点在", "6.6", "到16.1")
    assert not glued_in(text, "放在一起,交点在", "6.7", "到16.1")
    assert glued_in("交点在6.6", "交点在", "6.6", "到16.1")  # one side is enough
    assert not glued_in("别处的6.6", "交点在", "6.6", "到16.1")
    assert glued_in("表头7.2", "", "7.2", "")  # no neighbouring words: the value alone
