"""Render text lines (DejaVu Sans for Latin, WenQuanYi Micro Hei for Chinese) as PNG images with labels.

Deterministic: the same seed gives the same images. Writes OUT/line_NNN.png, OUT/labels.tsv and
OUT/page.png (a paragraph page for the text detector). Usage: render_text.py OUT_DIR [COUNT]
"""
import os
import random
import sys

from PIL import Image, ImageDraw, ImageFont

LATIN = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
CJK = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
WORDS = ("deep learning accelerator tensor layer kernel stream buffer model engine compile runtime jetson orin "
         "xavier inference calibration precision image text detection recognition network batch").split()
HANZI = "深度学习加速器测试今天天气很好模型推理图像文字识别检测网络精度量化校准运行时间引擎"


def lines(count, rng):
    for i in range(count):
        if i % 3 == 2:
            yield "".join(rng.choice(HANZI) for _ in range(rng.randint(4, 10))), CJK
        else:
            words = [rng.choice(WORDS) for _ in range(rng.randint(2, 4))]
            if i % 2:
                words.append(str(rng.randint(0, 9999)))
            yield " ".join(words).capitalize(), LATIN


def main():
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 24
    os.makedirs(out, exist_ok=True)
    if os.path.exists(os.path.join(out, "labels.tsv")) and len(open(os.path.join(out, "labels.tsv")).readlines()) == count:
        return
    rng = random.Random(1234)
    with open(os.path.join(out, "labels.tsv"), "w", encoding="utf-8") as labels:
        for i, (text, font_path) in enumerate(lines(count, rng)):
            font = ImageFont.truetype(font_path, 32)
            w = int(font.getlength(text)) + 16
            img = Image.new("RGB", (w, 48), (255, 255, 255))
            ImageDraw.Draw(img).text((8, 6), text, font=font, fill=(0, 0, 0))
            name = "line_%03d.png" % i
            img.save(os.path.join(out, name))
            labels.write("%s\t%s\n" % (name, text))
    page = Image.new("RGB", (640, 640), (250, 250, 245))
    d = ImageDraw.Draw(page)
    y = 30
    for text, font_path in lines(12, random.Random(99)):
        d.text((30, y), text, font=ImageFont.truetype(font_path, 28), fill=(10, 10, 10))
        y += 48
    page.save(os.path.join(out, "page.png"))


if __name__ == "__main__":
    main()
