"""Attribution beyond attention weights: what each input token contributes, measured three more ways.

* **Norm-based attention** (Kobayashi et al. 2020, "Attention is not only a weight"): a layer's output at token
  ``i`` is ``sum_h sum_j alpha^h_ij f^h(x_j)`` with ``f^h(x_j) = v^h_j W_O^h`` (the value of token ``j`` in head
  ``h``, bias included, through that head's slice of the output projection).  Per head ``||alpha^h_ij f^h(x_j)||``,
  per layer ``||sum_h alpha^h_ij f^h(x_j)||`` (:func:`norm_contributions`, :func:`norm_attention`).
* **Value zeroing** (Mohebbi et al. 2023): token ``j``'s value vector is set to zero in every head of one layer
  (its input kept), and ``C_l[i, j]`` is the cosine distance between the layer's output at ``i`` with and
  without it; rows renormalised to sum to one (:func:`value_zeroing_scores`, :func:`value_zeroing`).  The
  layer's residual and feed-forward are inside the measurement, so the layers chain without an added identity:
  ``rollout(C, residual=0)``.
* **ALTI** (Ferrando, Gallego & Costa-jussa 2022, "Measuring the Mixing of Contextual Information in the
  Transformer"): a layer's attention sublayer output at token ``i`` (with its residual, and through the
  LayerNorm after it in a post-norm model, linearised at the row's real standard deviation) is split exactly into
  one vector per input token, ``y_i = sum_j T_i(x_j) + b_i`` with ``T_i(x_j) = sum_h alpha^h_ij f^h(x_j)
  (+ x_i when j = i)`` and ``b_i`` what no token carries (the output projection's bias, the LayerNorm's beta);
  ``c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1)``, rows renormalised (:func:`alti_vectors`,
  :func:`alti_contributions`, :func:`alti`).  The residual is inside, so the layers chain as value zeroing's:
  ``rollout(C, residual=0)``.
* **ALTI-Logit** (Ferrando, Gallego, Tsiamas & Costa-jussa 2023, "Explaining How Transformers Use Context to
  Build Predictions"), for pre-norm attnlab classifiers: signed.  What layer ``l``'s attention adds to the
  predicted class's logit from each position ``j`` of its input, ``D_l[j] = sum_i u_i . sum_h alpha^h_ij
  f^h(x_j)``, with ``u_i`` the direction the logit reads row ``i`` of the residual stream (the final LayerNorm
  linearised at each row's real standard deviation, the pooling at its real max rows or weights, the head's row
  of the class: :func:`logit_directions`), carried to the input by ALTI's rollout of the layers below:
  ``sum_l D_l @ R_{l-1}`` (:func:`alti_logit`).
* **Gradient x input** (the non-attention baseline): ``sum_d x_jd * d score / d x_jd`` at the first layer's
  input ``x`` (the embeddings), for a scalar ``score`` such as the predicted class's probability
  (:func:`gradient_x_input`); signed, a first-order estimate of what blanking the token changes.

The model is any one whose attention layers :func:`layer_parts` finds: attnlab's transformer blocks and the
BERT family of Hugging Face encoders (``encoder.layer[i].attention.self.value`` / ``.output.dense``, as the
bundled MiniLM).  Attention weights come from each layer's own call, in the model's dtype (attnlab's hook payload,
BERT's eager self-attention output, switched on by :func:`attnlab.capture`), so a float64 model is exact in float64;
values and layer outputs from forward hooks, removed when the function returns.  What a classifier's prediction
reads of the last layer's rows is :func:`pooling_reader`.

Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.

One module per job: ``_layers`` finds the attention layers and records what each computed on one input (and the
LayerNorm linearisation the methods share), ``_norm`` the norms, ``_value_zeroing``, ``_alti``, ``_gradient``,
``_classifier`` (an attnlab classifier's embedding mixing and pooling reader), ``_logit`` (ALTI-Logit), ``_text``
(all of them on one text) and ``_summary`` (what ``attnlab analyze --attribution`` reports of them: the rolled-out
maps, the JSON, the prediction and its per-token table); the public names are all here.


Letters: L layers, H heads, n tokens, M d_model, Dv per-head value size, B batch.
"""

from ._alti import alti, alti_contributions, alti_vectors
from ._classifier import embedding_contributions, embedding_vectors, pooled_attention, pooling_reader
from ._gradient import gradient_x_input
from ._layers import LayerParts, LayerRun, layer_parts, run_layers
from ._lm import (
    GenerationAttribution,
    LMLogitAttribution,
    attribute_generation,
    generation_windows,
    lm_alti_logit,
    lm_gradient_x_input,
    lm_logit_directions,
)
from ._lm import attribution_figure as generation_attribution_figure
from ._logit import LogitAttribution, alti_logit, logit_directions
from ._norm import NormAttention, attention_vectors, norm_attention, norm_contributions, value_outputs
from ._summary import METHOD_TITLES, AttributionSummary, summarize_attribution
from ._text import TextAttribution, attribute_text
from ._translation import (
    TranslationAttribution,
    attribute_translation,
    translation_attribution_figure,
    translation_logit_directions,
)
from ._value_zeroing import value_zeroing, value_zeroing_scores

__all__ = [
    "METHOD_TITLES",
    "AttributionSummary",
    "GenerationAttribution",
    "LMLogitAttribution",
    "LayerParts",
    "LayerRun",
    "LogitAttribution",
    "NormAttention",
    "TextAttribution",
    "TranslationAttribution",
    "alti",
    "alti_contributions",
    "alti_logit",
    "alti_vectors",
    "attention_vectors",
    "attribute_generation",
    "attribute_text",
    "attribute_translation",
    "embedding_contributions",
    "embedding_vectors",
    "generation_attribution_figure",
    "generation_windows",
    "gradient_x_input",
    "layer_parts",
    "lm_alti_logit",
    "lm_gradient_x_input",
    "lm_logit_directions",
    "logit_directions",
    "norm_attention",
    "norm_contributions",
    "pooled_attention",
    "pooling_reader",
    "run_layers",
    "summarize_attribution",
    "translation_attribution_figure",
    "translation_logit_directions",
    "value_outputs",
    "value_zeroing",
    "value_zeroing_scores",
]
