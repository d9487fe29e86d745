"""The toy English-Chinese grammar's lexicon: every word it can say, with its Chinese.

Nouns carry their plural, their Chinese, their measure word (只 for most animals, 本 for books, 张 for flat
things, 条 for long ones, 辆 for vehicles ...), a coarse kind that verbs select on, and the locative
prepositions they can follow ("on the mat", "in the box").  Verbs carry their three English forms (base,
third-person present, past), their Chinese, the kinds of subject and object they take, and whether they are
stative (no 了) or posture verbs (the 在-phrase follows them in Chinese: 坐在垫子上).  The grammar rules live
in ``_grammar.py``; this module is data only.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ADJECTIVES",
    "FUNCTION_WORDS",
    "HELD_OUT",
    "NAMES",
    "NOUNS",
    "NUMBERS",
    "PREPOSITIONS",
    "TIMES",
    "VERBS",
    "Adjective",
    "Name",
    "Noun",
    "Preposition",
    "Time",
    "Verb",
    "chinese_characters",
    "english_words",
]


@dataclass(frozen=True)
class Noun:
    en: str
    plural: str
    zh: str
    measure: str  # the measure word after a numeral: 三本书
    kind: str  # person, animal, legless (fish, snake), thing, food, place
    preps: tuple[str, ...] = ()  # the locative prepositions it can follow ("on", "in", ...)


@dataclass(frozen=True)
class Name:
    en: str
    zh: str
    kind: str = "person"


@dataclass(frozen=True)
class Verb:
    base: str
    s3: str  # third person singular present
    past: str
    zh: str
    subj: tuple[str, ...]  # noun kinds it takes as subject
    obj: tuple[str, ...] = ()  # noun kinds it takes as object; () = intransitive
    objects: tuple[str, ...] = ()  # or: exactly these nouns as object (overrides obj)
    stative: bool = False  # like, know, have, want: never 了, negated with 不 (有 with 没)
    posture: bool = False  # sit, stand, lie, sleep, live: 在-phrase after the verb (坐在垫子上)
    loc: str = ""  # intransitives: "" = no locative, "opt" = optional, "req" = required
    places: tuple[str, ...] = ()  # only these nouns as its location (swim: the river)
    preps: tuple[str, ...] = ()  # only these prepositions ("wait on" would be another verb)
    resultative: bool = False  # 看见, 找到, 抓住: a result, so never negated with 不 (猫不看见狗 is wrong)
    tenses: tuple[str, ...] = ("past", "present")  # "read" is past only: its base form is its past form

    @property
    def transitive(self) -> bool:
        return bool(self.obj or self.objects)


@dataclass(frozen=True)
class Adjective:
    en: str
    zh: dict[str, str]  # noun kind -> the Chinese modifier (大, 快乐的 ...); kinds not listed cannot take it


@dataclass(frozen=True)
class Preposition:
    en: str
    zh: str  # the localiser after the noun: 在垫子上, 在盒子里, 在门旁边


@dataclass(frozen=True)
class Time:
    en: str
    zh: str
    tense: str  # "past" (yesterday) or "present" (every day)


# fmt: off
_P = "person"
_A = "animal"
_L = "legless"
_T = "thing"
_F = "food"
_PL = "place"

NOUNS: tuple[Noun, ...] = (
    # people
    Noun("boy", "boys", "男孩", "个", _P), Noun("girl", "girls", "女孩", "个", _P),
    Noun("man", "men", "男人", "个", _P), Noun("woman", "women", "女人", "个", _P),
    Noun("child", "children", "孩子", "个", _P), Noun("teacher", "teachers", "老师", "位", _P),
    Noun("doctor", "doctors", "医生", "位", _P), Noun("student", "students", "学生", "个", _P),
    Noun("farmer", "farmers", "农民", "个", _P), Noun("driver", "drivers", "司机", "个", _P),
    Noun("cook", "cooks", "厨师", "个", _P), Noun("friend", "friends", "朋友", "个", _P),
    Noun("worker", "workers", "工人", "个", _P), Noun("nurse", "nurses", "护士", "个", _P),
    Noun("singer", "singers", "歌手", "个", _P), Noun("baby", "babies", "婴儿", "个", _P),
    # animals
    Noun("cat", "cats", "猫", "只", _A), Noun("dog", "dogs", "狗", "只", _A),
    Noun("bird", "birds", "鸟", "只", _A), Noun("horse", "horses", "马", "匹", _A),
    Noun("mouse", "mice", "老鼠", "只", _A), Noun("rabbit", "rabbits", "兔子", "只", _A),
    Noun("duck", "ducks", "鸭子", "只", _A), Noun("cow", "cows", "牛", "头", _A),
    Noun("pig", "pigs", "猪", "头", _A), Noun("tiger", "tigers", "老虎", "只", _A),
    Noun("monkey", "monkeys", "猴子", "只", _A), Noun("panda", "pandas", "熊猫", "只", _A),
    Noun("elephant", "elephants", "大象", "头", _A), Noun("chicken", "chickens", "鸡", "只", _A),
    Noun("bear", "bears", "熊", "只", _A), Noun("sheep", "sheep", "羊", "只", _A),
    Noun("frog", "frogs", "青蛙", "只", _A), Noun("wolf", "wolves", "狼", "只", _A),
    Noun("fish", "fish", "鱼", "条", _L), Noun("snake", "snakes", "蛇", "条", _L),
    # things
    Noun("book", "books", "书", "本", _T, ("on", "next to")),
    Noun("mat", "mats", "垫子", "张", _T, ("on", "under", "next to")),
    Noun("table", "tables", "桌子", "张", _T, ("on", "under", "next to", "behind")),
    Noun("chair", "chairs", "椅子", "把", _T, ("on", "under", "next to", "behind")),
    Noun("bed", "beds", "床", "张", _T, ("on", "under", "next to")),
    Noun("box", "boxes", "盒子", "个", _T, ("on", "in", "next to", "behind")),
    Noun("bag", "bags", "包", "个", _T, ("in", "next to")),
    Noun("car", "cars", "汽车", "辆", _T, ("in", "under", "next to", "behind", "in front of")),
    Noun("bus", "buses", "公共汽车", "辆", _T, ("on", "next to", "behind", "in front of")),
    Noun("bike", "bikes", "自行车", "辆", _T, ("on", "next to")),
    Noun("sofa", "sofas", "沙发", "张", _T, ("on", "behind", "next to")),
    Noun("desk", "desks", "书桌", "张", _T, ("on", "under", "next to")),
    Noun("tree", "trees", "树", "棵", _T, ("under", "next to", "behind", "in front of")),
    Noun("house", "houses", "房子", "座", _T, ("in", "next to", "behind", "in front of")),
    Noun("door", "doors", "门", "扇", _T, ("next to", "behind", "in front of")),
    Noun("window", "windows", "窗户", "扇", _T, ("next to", "in front of")),
    Noun("boat", "boats", "船", "条", _T, ("on", "in", "next to")),
    Noun("cup", "cups", "杯子", "个", _T), Noun("bottle", "bottles", "瓶子", "个", _T),
    Noun("pen", "pens", "笔", "支", _T), Noun("pencil", "pencils", "铅笔", "支", _T),
    Noun("letter", "letters", "信", "封", _T), Noun("ball", "balls", "球", "个", _T),
    Noun("hat", "hats", "帽子", "顶", _T), Noun("shoe", "shoes", "鞋", "只", _T),
    Noun("flower", "flowers", "花", "朵", _T), Noun("key", "keys", "钥匙", "把", _T),
    Noun("picture", "pictures", "画", "幅", _T), Noun("phone", "phones", "手机", "部", _T),
    Noun("computer", "computers", "电脑", "台", _T), Noun("newspaper", "newspapers", "报纸", "份", _T),
    Noun("ticket", "tickets", "票", "张", _T), Noun("umbrella", "umbrellas", "伞", "把", _T),
    Noun("bowl", "bowls", "碗", "个", _T), Noun("knife", "knives", "刀", "把", _T),
    Noun("spoon", "spoons", "勺子", "把", _T), Noun("map", "maps", "地图", "张", _T),
    Noun("photo", "photos", "照片", "张", _T), Noun("kite", "kites", "风筝", "个", _T),
    Noun("toy", "toys", "玩具", "个", _T), Noun("shirt", "shirts", "衬衫", "件", _T),
    Noun("coat", "coats", "外套", "件", _T), Noun("dress", "dresses", "裙子", "条", _T),
    Noun("watch", "watches", "手表", "块", _T), Noun("towel", "towels", "毛巾", "条", _T),
    # food
    Noun("apple", "apples", "苹果", "个", _F), Noun("banana", "bananas", "香蕉", "根", _F),
    Noun("cake", "cakes", "蛋糕", "块", _F), Noun("egg", "eggs", "鸡蛋", "个", _F),
    Noun("orange", "oranges", "橙子", "个", _F), Noun("pear", "pears", "梨", "个", _F),
    Noun("carrot", "carrots", "胡萝卜", "根", _F), Noun("cookie", "cookies", "饼干", "块", _F),
    Noun("sandwich", "sandwiches", "三明治", "个", _F), Noun("peach", "peaches", "桃子", "个", _F),
    # places
    Noun("garden", "gardens", "花园", "个", _PL, ("in",)),
    Noun("park", "parks", "公园", "个", _PL, ("in", "next to")),
    Noun("kitchen", "kitchens", "厨房", "个", _PL, ("in",)),
    Noun("room", "rooms", "房间", "个", _PL, ("in",)),
    Noun("river", "rivers", "河", "条", _PL, ("in", "next to")),
    Noun("bridge", "bridges", "桥", "座", _PL, ("on", "under")),
    Noun("school", "schools", "学校", "所", _PL, ("in", "next to", "behind", "in front of")),
    Noun("shop", "shops", "商店", "家", _PL, ("in", "next to", "in front of")),
    Noun("floor", "floors", "地板", "块", _PL, ("on",)),
    Noun("grass", "grasses", "草地", "片", _PL, ("on",)),
    Noun("roof", "roofs", "屋顶", "个", _PL, ("on",)),
)

NAMES: tuple[Name, ...] = (
    Name("Tom", "汤姆"), Name("Mary", "玛丽"), Name("Jack", "杰克"), Name("Lily", "莉莉"),
    Name("Lucy", "露西"), Name("David", "大卫"), Name("Anna", "安娜"), Name("Peter", "彼得"),
    Name("Emma", "艾玛"), Name("Sam", "山姆"), Name("Xiaoming", "小明"), Name("Xiaohong", "小红"),
)

_ANIMATE = (_P, _A)
_ALIVE = (_P, _A, _L)
_CONCRETE = (_P, _A, _L, _T, _F)
_HANDY = ("book", "cup", "bottle", "pen", "pencil", "letter", "ball", "hat", "shoe", "key", "phone",
          "ticket", "umbrella", "bowl", "knife", "spoon", "map", "photo", "kite", "toy", "watch", "towel",
          "bag", "box", "newspaper", "picture", "flower")

VERBS: tuple[Verb, ...] = (
    # eventive transitive verbs
    Verb("see", "sees", "saw", "看见", _ALIVE, _CONCRETE, resultative=True),
    Verb("chase", "chases", "chased", "追", _ANIMATE, _ALIVE),
    Verb("find", "finds", "found", "找到", _ANIMATE, (_A, _T, _F), resultative=True),
    Verb("buy", "buys", "bought", "买", (_P,), (_T, _F)),
    Verb("eat", "eats", "ate", "吃", _ALIVE, (_F,)),
    Verb("wash", "washes", "washed", "洗", (_P,),
         objects=("cup", "bowl", "shirt", "coat", "dress", "towel", "car", "bike", "apple", "dog", "cat")),
    Verb("draw", "draws", "drew", "画", (_P,), (_P, _A, _L, _T, _F)),
    Verb("help", "helps", "helped", "帮助", (_P,), _ANIMATE),
    Verb("catch", "catches", "caught", "抓住", _ANIMATE, (_A, _L), resultative=True),
    Verb("take", "takes", "took", "拿走", (_P,), objects=(*_HANDY, "apple", "banana", "cake", "egg")),
    Verb("open", "opens", "opened", "打开", (_P,),
         objects=("door", "window", "box", "bag", "book", "computer", "umbrella", "letter")),
    Verb("close", "closes", "closed", "关上", (_P,), objects=("door", "window", "box", "book", "computer")),
    Verb("kick", "kicks", "kicked", "踢", _ANIMATE, objects=("ball", "box", "door", "chair", "dog", "cat")),
    Verb("visit", "visits", "visited", "拜访", (_P,), (_P,)),
    Verb("read", "reads", "read", "看", (_P,), objects=("book", "newspaper", "letter", "map"),
         tenses=("past",)),
    Verb("write", "writes", "wrote", "写", (_P,), objects=("letter", "book")),
    Verb("throw", "throws", "threw", "扔", (_P,), objects=(*_HANDY, "apple", "egg", "orange")),
    Verb("push", "pushes", "pushed", "推", _ANIMATE,
         objects=("car", "bike", "box", "chair", "table", "door", "boy", "girl", "dog", "pig")),
    Verb("pull", "pulls", "pulled", "拉", _ANIMATE, objects=("car", "bike", "box", "chair", "table", "door")),
    Verb("feed", "feeds", "fed", "喂", (_P,), (_A, _L)),
    Verb("clean", "cleans", "cleaned", "打扫", (_P,), objects=("room", "kitchen", "house", "garden", "school")),
    Verb("sell", "sells", "sold", "卖", (_P,), (_T, _F, _A)),
    Verb("meet", "meets", "met", "遇见", _ANIMATE, _ANIMATE, resultative=True),
    Verb("bite", "bites", "bit", "咬", (_A, _L), (_P, _A, _L, _F)),
    Verb("smell", "smells", "smelled", "闻", _ANIMATE, (_F,)),
    Verb("hide", "hides", "hid", "藏", _ANIMATE, objects=(*_HANDY, "apple", "banana", "cake", "egg")),
    Verb("break", "breaks", "broke", "打破", _ANIMATE, objects=("cup", "bowl", "window", "bottle"),
         resultative=True),
    Verb("drive", "drives", "drove", "开", (_P,), objects=("car", "bus", "boat")),
    Verb("ride", "rides", "rode", "骑", (_P,), objects=("bike", "horse", "elephant")),
    # stative transitive verbs
    Verb("like", "likes", "liked", "喜欢", _ANIMATE, _CONCRETE, stative=True),
    Verb("love", "loves", "loved", "爱", (_P,), _ANIMATE, stative=True),
    Verb("know", "knows", "knew", "认识", _ANIMATE, _ANIMATE, stative=True),
    Verb("have", "has", "had", "有", _ANIMATE, (_A, _L, _T, _F), stative=True),
    Verb("want", "wants", "wanted", "想要", _ANIMATE, (_T, _F, _A), stative=True),
    # posture verbs: the 在-phrase follows them (坐在垫子上)
    Verb("sit", "sits", "sat", "坐", _ANIMATE, posture=True, loc="req"),
    Verb("stand", "stands", "stood", "站", _ANIMATE, posture=True, loc="req"),
    Verb("lie", "lies", "lay", "躺", _ALIVE, posture=True, loc="req"),
    Verb("sleep", "sleeps", "slept", "睡", _ALIVE, posture=True, loc="req"),
    Verb("live", "lives", "lived", "住", _ALIVE, posture=True, loc="req",
         places=("house", "garden", "park", "river", "school", "tree", "box")),
    # activity intransitives: the 在-phrase comes before them (在花园里玩)
    Verb("play", "plays", "played", "玩", _ANIMATE, loc="opt"),
    Verb("run", "runs", "ran", "跑", _ANIMATE, loc="opt",
         places=("garden", "park", "school", "tree", "house", "river", "bridge", "grass", "room")),
    Verb("sing", "sings", "sang", "唱歌", (_P,), loc="opt"),
    Verb("dance", "dances", "danced", "跳舞", (_P,), loc="opt"),
    Verb("swim", "swims", "swam", "游泳", (_P, _A, _L), loc="opt", places=("river",)),
    Verb("work", "works", "worked", "工作", (_P,), loc="opt"),
    Verb("wait", "waits", "waited", "等", _ANIMATE, loc="req", preps=("next to", "behind", "in front of", "in")),
    Verb("cry", "cries", "cried", "哭", (_P,), loc="opt"),
    Verb("laugh", "laughs", "laughed", "笑", (_P,), loc="opt"),
    Verb("jump", "jumps", "jumped", "跳", _ANIMATE, loc="opt"),
    Verb("study", "studies", "studied", "学习", (_P,), loc="opt"),
    Verb("rest", "rests", "rested", "休息", _ALIVE, loc="opt"),
)

_AN = (_P, _A, _L)  # people and animals
ADJECTIVES: tuple[Adjective, ...] = (
    Adjective("big", {_A: "大", _L: "大", _T: "大", _F: "大", _PL: "大"}),
    Adjective("small", {_A: "小", _L: "小", _T: "小", _F: "小", _PL: "小"}),
    Adjective("black", {_A: "黑", _L: "黑", _T: "黑"}),
    Adjective("white", {_A: "白", _L: "白", _T: "白"}),
    Adjective("red", {_T: "红", _F: "红"}),
    Adjective("yellow", {_T: "黄", _F: "黄", _A: "黄"}),
    Adjective("blue", {_T: "蓝色的"}),
    Adjective("green", {_T: "绿色的", _F: "绿色的"}),
    Adjective("brown", {_A: "棕色的", _T: "棕色的"}),
    Adjective("new", {_T: "新"}),
    Adjective("old", {_P: "老", _A: "老", _T: "旧"}),
    Adjective("young", {_P: "年轻的"}),
    Adjective("happy", {k: "快乐的" for k in (_P, _A)}),
    Adjective("hungry", {k: "饥饿的" for k in _AN}),
    Adjective("clever", {k: "聪明的" for k in (_P, _A)}),
    Adjective("lazy", {k: "懒惰的" for k in (_P, _A)}),
    Adjective("beautiful", {_P: "漂亮的", _A: "漂亮的", _T: "漂亮的", _PL: "漂亮的"}),
    Adjective("fat", {k: "胖" for k in (_P, _A)}),
    Adjective("clean", {_T: "干净的", _PL: "干净的"}),
    Adjective("dirty", {_A: "脏", _T: "脏", _PL: "脏"}),
    Adjective("friendly", {k: "友好的" for k in (_P, _A)}),
    Adjective("sweet", {_F: "甜"}),
)

PREPOSITIONS: tuple[Preposition, ...] = (
    Preposition("on", "上"), Preposition("under", "下"), Preposition("in", "里"),
    Preposition("next to", "旁边"), Preposition("behind", "后面"), Preposition("in front of", "前面"),
)

# 2 is 两 before a measure word (两本书), never 二.
NUMBERS: tuple[tuple[str, str], ...] = (
    ("two", "两"), ("three", "三"), ("four", "四"), ("five", "五"), ("six", "六"),
    ("seven", "七"), ("eight", "八"), ("nine", "九"), ("ten", "十"),
)

TIMES: tuple[Time, ...] = (
    Time("yesterday", "昨天", "past"), Time("last night", "昨天晚上", "past"),
    Time("yesterday morning", "昨天早上", "past"), Time("yesterday afternoon", "昨天下午", "past"),
    Time("last week", "上个星期", "past"), Time("last year", "去年", "past"),
    Time("two days ago", "两天前", "past"), Time("three days ago", "三天前", "past"),
    Time("this morning", "今天早上", "past"), Time("on Monday", "星期一", "past"),
    Time("every day", "每天", "present"), Time("every morning", "每天早上", "present"),
    Time("every evening", "每天晚上", "present"), Time("every week", "每个星期", "present"),
    Time("on Sundays", "每个星期天", "present"), Time("every afternoon", "每天下午", "present"),
)
# fmt: on

# The grammar's own words: the article, the relative pronoun, auxiliaries and negation in English;
# the particles in Chinese.
FUNCTION_WORDS: dict[str, str] = {
    "the": "", "a": "一", "an": "一", "that": "的", "did": "", "does": "", "do": "", "not": "不",
    "PAST": "了", "QUESTION": "吗", "AT": "在", "NEG_PAST": "没有", "NEG_HAVE": "没",
}

# (verb base form, object noun): never together in train/valid/test, only in extra["compositional"].
# Each verb keeps other objects in training and each noun is the object of other verbs there.
HELD_OUT: tuple[tuple[str, str], ...] = (
    ("chase", "rabbit"), ("see", "elephant"), ("eat", "banana"), ("buy", "umbrella"), ("find", "key"),
    ("wash", "cup"), ("read", "newspaper"), ("like", "panda"), ("help", "teacher"), ("open", "window"),
    ("feed", "horse"), ("kick", "ball"), ("draw", "tiger"), ("know", "doctor"),
)


def english_words() -> frozenset[str]:
    """Every English word the grammar can write (lower case, multi-word entries split)."""
    words: set[str] = {w for w in FUNCTION_WORDS if w.islower()}
    for n in NOUNS:
        words |= {n.en, n.plural}
    words |= {n.en.lower() for n in NAMES}
    for v in VERBS:
        words |= {v.base, v.s3, v.past}
    words |= {a.en for a in ADJECTIVES}
    for text in [p.en for p in PREPOSITIONS] + [t.en.lower() for t in TIMES] + [e for e, _ in NUMBERS]:
        words |= set(text.split())
    return frozenset(words)


def chinese_characters() -> frozenset[str]:
    """Every Chinese character the lexicon holds (targets use these and 。？ only)."""
    texts = [n.zh + n.measure for n in NOUNS] + [n.zh for n in NAMES] + [v.zh for v in VERBS]
    texts += [z for a in ADJECTIVES for z in a.zh.values()] + [p.zh for p in PREPOSITIONS]
    texts += [z for _, z in NUMBERS] + [t.zh for t in TIMES] + list(FUNCTION_WORDS.values())
    return frozenset("".join(texts))
