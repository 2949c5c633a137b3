"""The vocabulary of the prompt-injection rules (``service.screening.injection_rules``): regex fragments for whom
an attack addresses, what it dictates and the words it uses, in English, in other Latin-script languages (matched on
the lower-cased skeleton view: no accents) and in other scripts (matched on the clean text).
"""

from __future__ import annotations

import re

__all__ = [
    "ADDRESSEE",
    "HIDDEN_VOCABULARY",
    "JUDGE",
    "JUDGE_WORDS",
    "ML_ADDRESS",
    "ML_ADDRESS_WORDS",
    "ML_ANSWER",
    "ML_ANSWER_PHRASES",
    "ML_GIVE",
    "ML_GIVE_PHRASES",
    "ML_IGNORE",
    "ML_IGNORE_PHRASES",
    "ML_MAX",
    "ML_QUALIFIER",
    "ML_RULES_NOUN",
    "ML_THIS_TEXT",
    "OTHER_ADDRESS",
    "OTHER_DICTATE",
    "OTHER_OVERRIDE",
    "OTHER_SCORE_LINE",
    "SCORE",
    "alternation",
]


def alternation(phrases: str) -> str:
    """A regex group matching any of the ``|``-separated literal ``phrases`` (longest first)."""
    return "(?:" + "|".join(re.escape(p) for p in sorted(phrases.split("|"), key=len, reverse=True)) + ")"


# Latin views are lower-cased once, so these patterns are written in lower case and compiled without IGNORECASE
# (several times faster on long documents). Accents are dropped in the skeleton, so words are written without them.
JUDGE = (
    r"(?:ai|a\.i\.|assistant|judge|evaluator|grader|rater|scorer|annotator|examiner|reviewer model|language model"
    r"|llm|model|chatbot|bot)"
)
# Whom an attack greets ("dear AI", "note to the grader"); not "judge", which news uses for the human kind.
ADDRESSEE = (
    r"(?:ai|a\.i\.|assistant|evaluator|grader|rater|scorer|annotator|reviewer model|language model|llm|model|chatbot"
    r"|bot)"
)
JUDGE_WORDS = frozenset(
    "ai assistant judge evaluator grader rater scorer annotator examiner model llm chatbot bot".split()
)
SCORE = (
    r"(?:[1-9]|10|one|two|three|four|five|a perfect score|full marks"
    r"|the (?:highest|maximum|top|best) (?:score|rating|mark|grade))"
)

# --- multilingual vocabularies, Latin script (matched on the lower-cased skeleton: no accents) ----------------------
ML_IGNORE_PHRASES = (
    "ignorez|oubliez|oublie|ne tenez pas compte|ne tenes pas compte|ne tiens pas compte|faites abstraction|"
    "fais abstraction|negligez|ignoriere|ignorieren sie|vergiss|vergessen sie|missachte|missachten sie|uberspringe|"
    "ignora|ignore|ignorad|ignoren|olvida|olvide|olviden|olvidad|omite|omita|descarta|descarte|haz caso omiso|"
    "hagan caso omiso|dimentica|dimenticate|trascura|trascurate|non tenere conto|esqueca|esquece|desconsidere|"
    "desconsidera|despreze|negeer|vergeet|zignoruj|ignoruj|zapomnij|pomin|ignorera|glom|glem|ignorer|ohita|unohda|"
    "ala valita|zapomen|zapomente|ignorujte|hagyd figyelmen kivul|felejtsd el|uita|bo qua|lupakan|abaikan|abaikanlah"
)
ML_IGNORE = alternation(ML_IGNORE_PHRASES)
ML_QUALIFIER = (
    r"(?:precedentes?|anterieures?|ci-dessus|toutes|tous|vorherigen?|obigen?|bisherigen?|alle[ns]?|vorigen?|"
    r"anteriores?|previas?|todas?|todos|precedenti|sopra|tutte|tutti|acima|eerdere|bovenstaande|vorige|"
    r"poprzednie|wszystkie|powyzsze|onceki|tum|yukaridaki|tidigare|tidligere|alla|aiemmat|aiempia|kaikki|"
    r"predchozi|vsechny|korabbi|osszes|anterioare|toate|truoc|moi|sebelumnya|semua)"
)
ML_RULES_NOUN = (
    r"(?:instructions?|consignes?|directives?|regles|criteres|anweisungen|anweisung|instruktionen|regeln|"
    r"vorgaben|richtlinien|kriterien|instrucciones|indicaciones|reglas|directrices|criterios|rubrica|istruzioni|"
    r"indicazioni|regole|direttive|criteri|instrucoes|orientacoes|regras|diretrizes|instructies|regels|"
    r"aanwijzingen|richtlijnen|instrukcje|polecenia|zasady|talimatlar\w*|kurallar\w*|yonergeler\w*|"
    r"instruktioner\w*|instruksjoner\w*|anvisningar|ohjeet|ohjeita|instrukce|pokyny|utasitasokat|utasitasait|"
    r"instructiunile|instructiuni|chi dan|huong dan|instruksi|petunjuk|perintah|arahan)"
)
ML_THIS_TEXT = (
    r"(?:ce (?:resume|texte)|cette reponse|diese[mnrs]? (?:text|zusammenfassung|antwort)|"
    r"(?:este|a este) (?:resumen|texto|resumo)|esta (?:respuesta|resposta)|(?:questo|a questo) (?:riassunto|testo)|"
    r"questa risposta|deze (?:samenvatting|tekst)|dit antwoord|(?:ten|temu) (?:tekst|streszczeni)\w*|"
    r"bu (?:ozet|metin)\w*|(?:tento|tomuto) (?:text|textu|shrnuti)|denna sammanfattning|dette (?:resume|sammendrag)|"
    r"talle tiivistelmalle|ezt a szoveget|acest rezumat|ban tom tat nay|ringkasan ini)"
)
ML_GIVE_PHRASES = (
    "donne|donnez|donner|attribue|attribuez|attribuer|accorde|accordez|accorder|mettez|notez|evaluez|gib|"
    "geben sie|vergib|vergeben sie|bewerte|bewerten sie|dale|asigna|asignale|otorga|otorgue|ponle|califica|"
    "calificalo|puntua|dai|assegna|assegnate|attribuisci|valuta|atribua|coloque|avalie|geef|beoordeel|daj|"
    "przyznaj|ocen|ge|giv|gi|anna|dej|dejte|adj|acorda|cho|beri|berikan|pongas|ponga|pon|noter"
)
ML_GIVE = alternation(ML_GIVE_PHRASES)
ML_ANSWER_PHRASES = (
    "reponds|repondez|antworte|antworten sie|responde|responda|respondan|contesta|conteste|rispondi|rispondete|"
    "antwoord|odpowiedz|svara|svar|vastaa|odpovez|valaszolj|raspunde|tra loi|jawab|jawablah"
)
ML_ANSWER = alternation(ML_ANSWER_PHRASES)
ML_MAX = (
    r"(?:note maximale|meilleure note|note la plus haute|hochstnote|bestnote|puntuacion maxima|nota maxima|"
    r"calificacion maxima|punteggio massimo|voto massimo|pontuacao maxima|hoogste (?:cijfer|score)|"
    r"maksymaln\w+ ocen\w*|tam puan|en yuksek puan|volle punktzahl|maximale punktzahl|hochste punktzahl|"
    r"maxima nota|nota mas alta|mejor nota|5 sur 5|hogsta betyg\w*|full pott)"
)
ML_ADDRESS_WORDS = (
    "note|message|remarque|avis|hinweis|nachricht|notiz|anmerkung|nota|mensaje|aviso|messaggio|mensagem|bericht|"
    "opmerking|uwaga|wiadomosc"
)
ML_ADDRESS = (
    r"\b" + alternation(ML_ADDRESS_WORDS) + r"\s+(?:pour|a|au|aux|an|fur|para|per|voor|dla|to)\s+"
    r"(?:l'|le |la |les |das |den |die |der |el |los |il |lo |o |os |het |de )?"
    r"(?:evaluat\w*|correct(?:eur|rice)\w*|ia|modele|bewert\w*|gutacht\w*|prufer\w*|ki(?:-modell)?|modell|"
    r"evaluador\w*|modelo|valutator\w*|modello|avaliador\w*|beoordelaar|model|ai|oceniajac\w*)\b"
)

# --- other scripts (matched on the clean text, only when it holds letters of that script) --------------------------
OTHER_OVERRIDE = (
    r"(?:проигнорируй|игнорируй|забудь|не обращай внимания на|пренебреги|отбрось|ігноруй)(?:те)?"
    r"[^.\n]{0,40}?(?:инструкци|указани|правил|команд|требовани|критери|інструкці|вказівк)"
    r"|(?:忽略|无视|無視|忽视|忽視|不要理会|不要理會|别管|別管|忘记|忘記|忘掉|抛开|拋開)[^。！？\n]{0,20}?"
    r"(?:指令|指示|说明|說明|规则|規則|提示|要求|命令|评分标准|評分標準)"
    r"|(?:指示|命令|ルール|指令|プロンプト|規則|지시|지침|명령|규칙)[^。.\n]{0,15}?(?:無視|忘れ|무시|잊어)"
    r"|(?:تجاهل|تجاهلي|تجاهلوا|انس|أهمل|اهمل)[^.\n]{0,30}?(?:التعليمات|تعليمات|الأوامر|الاوامر|القواعد|الإرشادات)"
    r"|निर्देश[^।\n]{0,20}?(?:अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल)"
    r"|(?:αγνόησε|αγνοήστε|ξέχνα|ξεχάστε|παράβλεψε)[^.\n]{0,40}?(?:οδηγ|εντολ|κανόν)"
    r"|(?:התעלם|התעלמי|התעלמו|שכח|שכחי|תשכח)[^.\n]{0,40}?(?:הוראות|ההוראות|הנחיות|ההנחיות|כללים)"
)
OTHER_ADDRESS = (
    r"(?:примечание|сообщение|заметка|обращение|внимание)\s+(?:для|к)\s+(?:модел|ии\b|оценщик|проверяющ|нейросет)"
    r"|(?:给|給|致|告诉|告訴|对|對)(?:评估者|評估者|评审|評審|评分者|評分者|模型|AI|人工智能|大模型|评委|評委)"
    r"|(?:評価者|採点者|モデル|AI)(?:へ|の方へ|に告ぐ)"
)
OTHER_DICTATE = (
    r"(?:поставь|дай|выстави|оцени|ответь|присвой|напиши|выведи)(?:те)?[^.\n]{0,40}?"
    r"(?:(?<![\d.,])(?:[1-9]|10)(?![\d.,%])|максимальн|высш|наивысш)"
    r"|(?:请|請|务必|務必|必须|必須|(?:这个|這個|该|該|本|此)(?:摘要|总结|總結|文本|回答|答案))[^。！？\n]{0,15}?"
    r"(?:打|给|給|评|評)\s*(?:[1-9]|10|满|滿|最高)\s*分"
    r"|(?:回答|输出|輸出|回复|回覆)\s*[「“\"']?\s*(?:[1-9]|10)(?![\d.])"
    r"|(?:[1-9]|10)\s*点\s*(?:を|で)?\s*(?:つけ|付け|与え|あげ)|満点\s*を\s*(?:つけ|付け|与え)"
    r"|(?:[1-9]|10)\s*と(?:答え|回答)|(?:[1-9]|10)\s*점\s*(?:을|를)?\s*(?:주세요|줘|주십시오|매겨)|만점\s*을\s*(?:주세요|줘)"
    r"|(?:أعط|اعط|امنح|ضع)[^.\n]{0,40}?(?:الدرجة|درجة|العلامة|علامة)[^.\n]{0,10}?[1-9]"
    r"|(?:απάντησε|απαντήστε|δώσε|δώστε|ענה|עני|ענו|תן|תני|תנו)[^.\n]{0,30}?(?<![\d.,])(?:[1-9]|10)(?![\d.,%])"
)
OTHER_SCORE_LINE = (
    r"^[ \t>*#_-]*(?:оценка|балл|评分|得分|分数|評分|分數|点数|スコア|評価|점수|평가)[ \t]*[:=][ \t]*(?:[1-5](?:\.0)?"
    r"(?:[ \t]*/[ \t]*(?:5|10))?)[ \t]*[.!*_]*[ \t]*$"
)
HIDDEN_VOCABULARY = (
    r"\b(?:scor\w*|rat(?:e|es|ed|ing)|grad\w*|mark(?:s|ed)?|judg\w*|evaluat\w*|rubric|verdict|ai|llm|model|"
    r"assistant|bot|instruction\w*|prompt\w*|ignore|disregard|answer|output|respond|reply|system|summary)\b"
)
