"""Rule-based coarse POS tags for languages without a spaCy pipeline on the package index.

The POS completeness filter (`extractor.pairs.pos_filter`, ESNLIR §2.2) only asks whether
a sentence holds a subject-like token (NOUN, PRON, PROPN) and a predicate (VERB, AUX).
Where no spaCy model can be installed (Ukrainian: `uk_core_news_*` is not on the package
index; the names there are placeholders), a lexicon can list ``rules:<lang>`` among its
`spacy_models`: `pos_filter` then tags with the rules below instead of a pipeline. They
give every token one Universal POS tag from closed word lists (pronouns, auxiliaries,
prepositions, conjunctions, particles) and verb endings, the rest NOUN (PROPN when
capitalised inside the sentence). Measured against hand labels in tests/test_ukrainian.py;
documented in phrase_lexicons/README.md ("Rule-based completeness check").

Known limits: a feminine or plural noun with a past-tense-like ending ("сила", "школи"
are safe; "могила" is read as a verb) can make a verbless fragment pass; a sentence whose
only verb has an irregular form missing from the lists is rejected. Present-tense nominal
sentences with a dash ("Київ — столиця України.") have no verb and are rejected, as a
spaCy pipeline's tags would have them rejected under the same rule.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "rules:"


@dataclass(frozen=True)
class Token:
    text: str
    pos_: str
    is_space: bool = False


_TOKEN = re.compile(r"[^\W\d_]+(?:['’ʼ-][^\W\d_]+)*|\d+(?:[.,]\d+)*|\S", re.U)


def _words(s: str) -> frozenset:
    return frozenset(s.split())


UK = {
    "PRON": _words("""я мене мені мною ти тебе тобі тобою він його йому ним нього ньому вона її їй нею неї
        воно ми нас нам нами ви вас вам вами вони їх їм ними них себе собі собою це цей ця ці цього цієї цих
        цьому цим цією той те ті того тієї тих тим тією хто кого кому ким що чого чому чим який яка яке
        які якого якої яких якому якій яким якими котрий котра котре котрі свій своя своє свої свого своєї
        своїх наш наша наше наші ваш ваша ваше ваші мій моя моє мої твій твоя твоє твої їхній їхня їхнє
        їхні весь вся все всі всього всієї всіх кожен кожний кожна кожне ніхто ніщо нічого щось хтось
        дехто дещо деякі деяких інший інша інше інші інших сам сама само самі такий така таке такі"""),
    "AUX": _words("""є був була було були буде будуть будемо будете будеш буду бути"""),
    # predicative words and frequent verb forms the endings below miss
    "VERB": _words("""можна треба потрібно слід необхідно варто немає нема може можуть можемо хоче хочуть
        іде йде ідуть йдуть веде ведуть живе пише каже бере дає дають стоїть лежить сидить бачить знає
        пішов прийшов зайшов вийшов перейшов увійшов дійшов знайшов пройшов відійшов"""),
    "ADP": _words("""в у на з із зі зо до від по за під над при про для без через між серед біля після перед
        коло крім о об щодо згідно протягом впродовж навколо поблизу завдяки замість поза понад проти
        вздовж уздовж всередині поміж"""),
    "CCONJ": _words("і й та а але або чи проте однак зате"),
    "SCONJ": _words("що як коли якщо бо щоб хоча хоч ніж поки доки немов ніби наче мов оскільки якби"),
    "PART": _words("не ні же ж б би лише тільки навіть вже уже ще також теж так ось от саме аж хай нехай"),
    "ADV": _words("""дуже тут там тоді тепер потім зараз завжди ніколи часто іноді десь колись якось чомусь
        куди звідки звідти сюди туди вгорі внизу тому отже відтак зокрема наприклад тобто насправді
        справді дійсно особливо майже досить більше менше найбільше"""),
}

# Verb endings (token lower-cased, at least 4 letters): reflexive, infinitive, present
# (3rd person), past, and the impersonal -но/-то forms ("засновано", "відкрито").
_UK_VERB_END = ("ться", "ся", "сь", "ати", "яти", "ити", "іти", "ути", "оти", "їти", "сти", "зти",
                "ють", "ять", "уть", "ать", "ує", "ює", "ає", "яє", "іє", "ить", "іть", "їть",
                "ав", "яв", "ив", "ув", "ала", "яла", "ила", "іла", "ула", "ало", "яло", "ило", "іло", "уло",
                "али", "яли", "или", "іли", "ули", "ано", "яно", "ено", "єно", "ито", "уто")
_UK_NOT_VERB = _words("""діти суть путь ртуть мати дати сила сили могила правила правило мило село тіло
    джерело число коло крило зло скло світло тепло явно рано погано дуже років""")


def tag_uk(text: str) -> list[Token]:
    out: list[Token] = []
    for i, m in enumerate(_TOKEN.finditer(text)):
        w = m.group(0)
        low = w.lower().replace("’", "'").replace("ʼ", "'")
        if not w[0].isalnum():
            pos = "PUNCT"
        elif w[0].isdigit():
            pos = "NUM"
        else:
            pos = next((tag for tag, words in UK.items() if low in words), "")
            if not pos:
                if i > 0 and w[0].isupper():
                    pos = "PROPN"
                elif len(low) >= 4 and low.endswith(_UK_VERB_END) and low not in _UK_NOT_VERB:
                    pos = "VERB"
                else:
                    pos = "NOUN"
        out.append(Token(w, pos))
    return out


TAGGERS = {"uk": tag_uk}


def is_rule_model(name: str | None) -> bool:
    return bool(name and name.startswith(PREFIX) and name[len(PREFIX):] in TAGGERS)


class RuleTagger:
    """The `nlp`-like object `pos_filter.load_model` returns for ``rules:<lang>``: `pipe`
    yields, per text, a list of tokens with `pos_` and `is_space`, as spaCy docs do."""

    def __init__(self, name: str):
        self.name = name
        self.tag = TAGGERS[name[len(PREFIX):]]
        self.pipe_names = ["rules"]

    def pipe(self, texts, batch_size: int = 256):
        for text in texts:
            yield self.tag(text or "")

    def __call__(self, text: str):
        return self.tag(text or "")
