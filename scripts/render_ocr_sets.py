"""Render the OCR accuracy sets (deterministic, Debian fonts only) for the INT8/FP16 accuracy checks.

OUT/ocr_eval/   240 text lines (2/3 English in DejaVu Sans/Serif/Mono, 1/3 Chinese in WenQuanYi Micro Hei)
OUT/ocr_calib/   48 more lines from another seed (calibration data, never evaluated)
OUT/pages_eval/, OUT/pages_calib/   3 paragraph pages each (640x640) for the text detector
Each line folder has labels.tsv (file<TAB>text). Usage: render_ocr_sets.py OUT_DIR
"""
import os
import random
import sys

from PIL import Image, ImageDraw, ImageFont

DEJAVU = "/usr/share/fonts/truetype/dejavu/"
LATIN = [DEJAVU + f for f in ("DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "DejaVuSans-Bold.ttf")]
CJK = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
WORDS = ("deep learning accelerator tensor layer kernel stream buffer model engine compile runtime jetson orin "
         "xavier inference calibration precision image text detection recognition network batch quantize "
         "scale range error report device memory format channel pixel camera robot vision power latency "
         "throughput board module driver update system window street market coffee river mountain garden "
         "station ticket price open close north south east west monday friday january october").split()
HANZI = ("深度学习加速器测试今天天气很好模型推理图像文字识别检测网络精度量化校准运行时间引擎中国北京上海城市道路交通"
         "银行医院学校商店公司电话号码地址出口入口请勿吸烟欢迎光临营业时间周一至周五开放关闭价格人民币元"
         "东南西北山水河流花园火车站机场飞机汽车地铁票务服务中心安全注意小心台阶禁止停车")


def make_line(i, rng):
    if i % 3 == 2:
        return "".join(rng.choice(HANZI) for _ in range(rng.randint(3, 10))), CJK
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.4:
        words.append(str(rng.randint(0, 99999)))
    text = " ".join(words)
    text = text.capitalize() if rng.random() < 0.5 else text.upper() if rng.random() < 0.3 else text
    return text, LATIN[i % len(LATIN)]


def render_lines(out, count, seed):
    os.makedirs(out, exist_ok=True)
    labels = os.path.join(out, "labels.tsv")
    if os.path.exists(labels) and len(open(labels, encoding="utf-8").readlines()) == count:
        return
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        text, font_path = make_line(i, rng)
        font = ImageFont.truetype(font_path, rng.randint(26, 36))
        ink = rng.randint(0, 70)
        paper = rng.randint(215, 255)
        w = int(font.getlength(text)) + 2 * rng.randint(6, 14)
        img = Image.new("RGB", (w, 48), (paper, paper, paper - rng.randint(0, 15)))
        ImageDraw.Draw(img).text((rng.randint(6, 12), rng.randint(2, 8)), text, font=font, fill=(ink, ink, ink))
        name = "line_%03d.png" % i
        img.save(os.path.join(out, name))
        rows.append("%s\t%s\n" % (name, text))
    with open(labels, "w", encoding="utf-8") as f:
        f.writelines(rows)


def render_pages(out, count, seed):
    os.makedirs(out, exist_ok=True)
    rng = random.Random(seed)
    for p in range(count):
        path = os.path.join(out, "page_%d.png" % p)
        page = Image.new("RGB", (640, 640), (250, 250, 245))
        d = ImageDraw.Draw(page)
        y = 24
        while y < 600:
            text, font_path = make_line(rng.randint(0, 99), rng)
            size = rng.randint(20, 34)
            d.text((rng.randint(16, 120), y), text, font=ImageFont.truetype(font_path, size), fill=(10, 10, 10))
            y += size + rng.randint(14, 30)
        if not os.path.exists(path):
            page.save(path)


def main():
    out = sys.argv[1]
    render_lines(os.path.join(out, "ocr_eval"), 240, 2024)
    render_lines(os.path.join(out, "ocr_calib"), 48, 7)
    render_pages(os.path.join(out, "pages_eval"), 3, 11)
    render_pages(os.path.join(out, "pages_calib"), 3, 12)


if __name__ == "__main__":
    main()
