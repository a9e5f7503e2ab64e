// Golden-file generator: node gen.mjs CACHE_DIR PROMPTS_JSON OUT_DIR
// For each model, writes OUT_DIR/<model>.json with the ids that the HF
// reference tokenizer (@huggingface/tokenizers) gives for every prompt, and
// the chat-template renderings (@huggingface/jinja, as transformers.js uses)
// with their ids.
import fs from "node:fs";
import path from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";

const [cacheDir, promptsPath, outDir] = process.argv.slice(2);
const spec = JSON.parse(fs.readFileSync(promptsPath, "utf8"));

// Deterministic long texts (no randomness): built from the spec's pieces.
function longText(recipe) {
  let s = "";
  let i = 0;
  while (s.length < recipe.chars) {
    s += recipe.pieces[i % recipe.pieces.length].replaceAll("{i}", String(i));
    i++;
  }
  return s;
}

function tokenString(v) {
  if (v == null) return "";
  if (typeof v === "string") return v;
  return v.content ?? "";
}

// deriveUnigram turns the Mistral BPE tokenizer.json ("llama2") into a
// Unigram one over the same pieces (no real Unigram tokenizer.json ships
// in an npm package we use). Scores are multiples of 1/8, so path sums are
// exact and every implementation breaks ties the same way. The Go test
// derives the same file (unigramFromBPE in spm_test.go).
function deriveUnigram(tj) {
  const pieces = Object.entries(tj.model.vocab).sort((a, b) => a[1] - b[1]);
  return {
    version: "1.0",
    added_tokens: tj.added_tokens,
    normalizer: null,
    pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: false },
    post_processor: tj.post_processor,
    decoder: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: false },
    model: {
      type: "Unigram",
      unk_id: 0,
      byte_fallback: false,
      vocab: pieces.map(([piece, id]) => [piece, -(1 + Math.floor(id / 64)) / 8]),
    },
  };
}

for (const model of spec.models) {
  const derived = model === "unigram";
  const dir = path.join(cacheDir, derived ? "llama2" : model);
  let tj = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  if (derived) tj = deriveUnigram(tj);
  const tc = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  const tok = new Tokenizer(tj, tc);
  // SentencePiece-style models do not decode back to the text (the "▁"
  // marker, a prepended space): record the reference's decode for them.
  const sentencePiece = tj.model.byte_fallback === true || tj.model.type === "Unigram";
  const source = fs.readFileSync(path.join(dir, "SOURCE"), "utf8").trim();
  const out = { model, source: derived ? `Unigram derived from ${source}` : source,
    reference: "@huggingface/tokenizers@0.2.0, @huggingface/jinja@0.5.11", encode: [], chat: [] };
  const texts = [...spec.prompts];
  for (const r of spec.long) texts.push({ name: r.name, text: longText(r), long: true });
  for (const p of texts) {
    for (const add of (p.long ? [false] : [false, true])) {
      const ids = tok.encode(p.text, { add_special_tokens: add }).ids;
      const e = { name: p.name, add_special_tokens: add, text: p.text, ids };
      if (!add && sentencePiece) e.decoded = ids.length ? tok.decode(ids, { skip_special_tokens: false }) : "";
      out.encode.push(e);
    }
  }
  const tpl = typeof tc.chat_template === "string" ? new Template(tc.chat_template) : null;
  if (tpl) {
    for (const c of spec.chats) {
      for (const gen of [true, false]) {
        let text;
        try {
          text = tpl.render({
            messages: c.messages,
            add_generation_prompt: gen,
            bos_token: tokenString(tc.bos_token),
            eos_token: tokenString(tc.eos_token),
          });
        } catch (e) {
          // The template refuses the conversation (e.g. Gemma: no system role).
          out.chat.push({ name: c.name, add_generation_prompt: gen, messages: c.messages, error: String(e.message ?? e) });
          continue;
        }
        const ids = tok.encode(text, { add_special_tokens: false }).ids;
        out.chat.push({ name: c.name, add_generation_prompt: gen, messages: c.messages, text, ids });
      }
    }
  }
  fs.writeFileSync(path.join(outDir, model + ".json"), JSON.stringify(out, null, 0) + "\n");
  console.log(model, out.encode.length, "encodings,", out.chat.length, "chats");
}
