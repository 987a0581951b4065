// 在浏览器里运行文中训练好的小 GPT。playground-start.js 在读者按下「载入模型」之后才加载本文件。
//
// 两部分：
// 1. 模型（不碰页面）：分词（字符 + 字节回退，同 code/tokenizer.py）、前向计算（同 code/tiny_transformer.py：
//    词嵌入 + 可学习的位置嵌入；每层 Pre-LN：LayerNorm → 因果多头注意力 → 加回残差，LayerNorm → 前馈网络
//    （d → 4d → 精确的 GELU → d）→ 加回残差；最后 LayerNorm 和输出层，输出层与词嵌入不共享权重）、KV 缓存
//    （同 code/kv_cache.py：每层存下每个位置的 k、v，新词元只算一行），以及解码（同 code/sampling.py：
//    重复惩罚 → 温度 → top-k → top-p → 抽签；或贪心）。
//    权重是构建时导出的 float16，或 int8（每个矩阵每行一个 float32 比例，向量仍是 float16；llmsite/playground/export.py），
//    读进来变成 float32；计算用 JavaScript 的双精度。
// 2. 页面：提示框、按钮、控件、概率图、注意力热力图（借用 figures.js 的 llmFigures.heatmap）。
//    词表里的字是数据：一律用 textContent 写进页面，从不拼 HTML。
// 3. 藏头诗：说明文件带 task（kind 为 acrostic，见 llmsite/playground/export.py）时，提示框换成「藏头」，
//    按模板拼出提示；可以强制每句的句首（受约束的解码，同 code/acrostic.py 的 write_forced_acrostic），
//    写完后逐句判断句首对没对上、格式是不是五言四句（同 acrostic.py 的 head_hits、well_formed）。
// 4. 并排比较：标记里写了几个模型（data-llm-compare）时，几个模型一起载入、各自核对，一组藏头各写一首（buildCompare）。
// tests/browser/test_playground.py 在 Chromium 里用 window.llmPlayground 把这里的每一步和 PyTorch 对照。
(function () {
  "use strict";
  var N_BYTES = 256;

  // ------------------------------------------------------------------ float16 → float32
  var HALF = null;
  function halfTable() {
    if (HALF) return HALF;
    HALF = new Float32Array(65536);
    for (var h = 0; h < 65536; h++) {
      var sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 31, frac = h & 1023;
      HALF[h] = exp === 0 ? sign * frac * Math.pow(2, -24)
        : exp === 31 ? (frac ? NaN : sign * Infinity)
        : sign * (1 + frac / 1024) * Math.pow(2, exp - 15);
    }
    return HALF;
  }

  function decodeHalf(buffer, count) {
    var table = halfTable(), out = new Float32Array(count), view = new DataView(buffer);
    for (var i = 0; i < count; i++) out[i] = table[view.getUint16(2 * i, true)];  // 小端
    return out;
  }

  // 每个张量一个 Float32Array。float16 文件：所有数连在一起，offset 数的是第几个数。
  // int8 文件：offset、scales 数的是字节；矩阵的每个码乘上它那一行的比例（整数乘 float32 在双精度里是精确的，
  // 存进 Float32Array 时舍入一次，和 numpy 的 float32 乘法得到同一个数）。
  function decodeTensors(header, buffer) {
    var t = {};
    var size = function (spec) { return spec.shape.reduce(function (a, b) { return a * b; }, 1); };
    if (header.dtype === "float16") {
      var all = decodeHalf(buffer, header.params);
      header.tensors.forEach(function (spec) { t[spec.name] = all.subarray(spec.offset, spec.offset + size(spec)); });
      return t;
    }
    var view = new DataView(buffer), table = halfTable(), total = 0;
    header.tensors.forEach(function (spec) {
      var n = size(spec), out = new Float32Array(n), i;
      if (spec.offset + n * (spec.dtype === "int8" ? 1 : 2) > buffer.byteLength) throw new Error("权重文件比说明的短");
      if (spec.dtype === "int8") {
        var rows = spec.shape[0], cols = n / rows;
        for (var r = 0; r < rows; r++) {
          var scale = view.getFloat32(spec.scales + 4 * r, true), base = r * cols;
          for (i = 0; i < cols; i++) out[base + i] = view.getInt8(spec.offset + base + i) * scale;
        }
      } else {
        for (i = 0; i < n; i++) out[i] = table[view.getUint16(spec.offset + 2 * i, true)];
      }
      t[spec.name] = out;
      total += n;
    });
    if (total !== header.params) throw new Error("权重文件的张量和说明对不上");
    return t;
  }

  // ------------------------------------------------------------------ 数学小件
  // 精确的 GELU 要 erf：|z| < 2.5 用泰勒级数，更大时用 erfc 的连分数（两者的误差都在 1e-12 以下）。
  function erf(x) {
    var z = Math.abs(x), r;
    if (z < 2.5) {
      var z2 = z * z, term = z, sum = z;
      for (var n = 1; n < 60; n++) {
        term *= -z2 / n;
        var add = term / (2 * n + 1);
        sum += add;
        if (Math.abs(add) < 1e-17) break;
      }
      r = sum * 1.1283791670955126;  // 2 / √π
    } else if (z < 6) {
      var f = z;
      for (var k = 60; k >= 1; k--) f = z + (k / 2) / f;
      r = 1 - Math.exp(-z * z) / (1.7724538509055159 * f);  // √π
    } else {
      r = 1;
    }
    return x < 0 ? -r : r;
  }

  function gelu(x) { return 0.5 * x * (1 + erf(x * 0.7071067811865476)); }

  // out = W x + b，W 是 PyTorch 的 (输出, 输入) 按行存放
  function linear(W, b, x, out, nIn, nOut) {
    for (var o = 0; o < nOut; o++) {
      var s = 0, base = o * nIn, i = 0;
      for (; i + 3 < nIn; i += 4) {
        s += W[base + i] * x[i] + W[base + i + 1] * x[i + 1] + W[base + i + 2] * x[i + 2] + W[base + i + 3] * x[i + 3];
      }
      for (; i < nIn; i++) s += W[base + i] * x[i];
      out[o] = s + b[o];
    }
    return out;
  }

  function layerNorm(x, g, b, out, n, eps) {
    var mean = 0, v = 0, i;
    for (i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (i = 0; i < n; i++) v += (x[i] - mean) * (x[i] - mean);
    var inv = 1 / Math.sqrt(v / n + eps);  // 有偏方差，和 nn.LayerNorm 一样
    for (i = 0; i < n; i++) out[i] = (x[i] - mean) * inv * g[i] + b[i];
    return out;
  }

  function softmaxInPlace(a, n) {
    var max = -Infinity, i, sum = 0;
    for (i = 0; i < n; i++) if (a[i] > max) max = a[i];
    for (i = 0; i < n; i++) { a[i] = a[i] === -Infinity ? 0 : Math.exp(a[i] - max); sum += a[i]; }
    for (i = 0; i < n; i++) a[i] /= sum;
    return a;
  }

  // ------------------------------------------------------------------ 模型
  function Model(header, buffer) {
    var c = header.config;
    if (header.format !== "llm-playground/1" || (header.dtype !== "float16" && header.dtype !== "int8")) {
      throw new Error("不认识的权重格式");
    }
    this.header = header;
    this.D = c.d_model; this.H = c.n_heads; this.L = c.n_layers; this.V = c.vocab_size; this.T = c.max_len;
    this.dh = this.D / this.H;
    this.eps = header.layer_norm_eps;
    var t = decodeTensors(header, buffer);
    this.t = t;
    this.F = c.mlp ? t["blocks.0.mlp.1.up.bias"].length : 0;
    this.chars = header.vocab.chars;
    var ids = new Map();
    this.chars.forEach(function (ch, i) { ids.set(ch, N_BYTES + i); });
    this.ids = ids;
    this.encoder = new TextEncoder();
  }

  // 文本 → 编号：认识的字取它的编号，不认识的拆成 UTF-8 字节（for…of 按码位走，和 Python 一样）
  Model.prototype.encode = function (text) {
    var out = [];
    for (var ch of text) {
      var id = this.ids.get(ch);
      if (id !== undefined) { out.push(id); continue; }
      var bytes = this.encoder.encode(ch);
      for (var i = 0; i < bytes.length; i++) out.push(bytes[i]);
    }
    return out;
  };

  // 编号 → 文本：连续的字节攒起来一起按 UTF-8 还原，拼不成字的显示成 �
  Model.prototype.decode = function (ids) {
    var out = "", pending = [];
    var flush = function () {
      if (pending.length) out += new TextDecoder("utf-8").decode(new Uint8Array(pending));
      pending = [];
    };
    for (var i = 0; i < ids.length; i++) {
      if (ids[i] < N_BYTES) { pending.push(ids[i]); continue; }
      flush();
      out += this.chars[ids[i] - N_BYTES];
    }
    flush();
    return out;
  };

  Model.prototype.tokenText = function (id) {
    if (id < N_BYTES) return "<0x" + (id < 16 ? "0" : "") + id.toString(16).toUpperCase() + ">";
    var ch = this.chars[id - N_BYTES];
    return ch === "\n" ? "换行" : ch === " " ? "空格" : ch;
  };

  Model.prototype.newCache = function () {
    var size = this.T * this.D, cache = { length: 0, tokens: [], k: [], v: [], attn: [] };
    for (var l = 0; l < this.L; l++) {
      cache.k.push(new Float64Array(size));
      cache.v.push(new Float64Array(size));
      var heads = [];
      for (var h = 0; h < this.H; h++) heads.push([]);
      cache.attn.push(heads);  // [层][头][位置] = 这个位置对 0..位置 的注意力权重
    }
    return cache;
  };

  // 带缓存的一步：送进一个词元（接在 cache.length 个位置之后），返回它的 logits（下一个词元的打分）
  Model.prototype.step = function (cache, token) {
    var D = this.D, H = this.H, dh = this.dh, t = this.t, pos = cache.length, eps = this.eps;
    if (pos >= this.T) throw new Error("超过了上下文长度 " + this.T);
    if (!(token >= 0 && token < this.V)) throw new Error("词元编号超出词表：" + token);
    var x = new Float64Array(D), h = new Float64Array(D), qkv = new Float64Array(3 * D);
    var y = new Float64Array(D), o = new Float64Array(D), scores = new Float64Array(pos + 1);
    var emb = t["embed.weight"], pe = t["pos.embedding.weight"], i, l, hd, s, d;
    for (i = 0; i < D; i++) x[i] = emb[token * D + i] + pe[pos * D + i];
    var scale = 1 / Math.sqrt(dh);
    for (l = 0; l < this.L; l++) {
      var p = "blocks." + l + ".";
      layerNorm(x, t[p + "ln.weight"], t[p + "ln.bias"], h, D, eps);
      linear(t[p + "attn.qkv.weight"], t[p + "attn.qkv.bias"], h, qkv, D, 3 * D);
      var K = cache.k[l], Vc = cache.v[l];
      for (i = 0; i < D; i++) { K[pos * D + i] = qkv[D + i]; Vc[pos * D + i] = qkv[2 * D + i]; }
      for (hd = 0; hd < H; hd++) {
        var off = hd * dh;
        for (s = 0; s <= pos; s++) {
          var dot = 0;
          for (d = 0; d < dh; d++) dot += qkv[off + d] * K[s * D + off + d];
          scores[s] = dot * scale;
        }
        softmaxInPlace(scores, pos + 1);
        cache.attn[l][hd][pos] = Float32Array.from(scores);
        for (d = 0; d < dh; d++) {
          var acc = 0;
          for (s = 0; s <= pos; s++) acc += scores[s] * Vc[s * D + off + d];
          y[off + d] = acc;
        }
      }
      linear(t[p + "attn.out.weight"], t[p + "attn.out.bias"], y, o, D, D);
      for (i = 0; i < D; i++) x[i] += o[i];
      if (this.F) this.mlp(p, x, h);
    }
    cache.length = pos + 1;
    cache.tokens.push(token);
    return this.head(x);
  };

  // 前馈子层：x += down(GELU(up(LayerNorm(x))))
  Model.prototype.mlp = function (p, x, h) {
    var t = this.t, D = this.D, F = this.F, u = new Float64Array(F), o = new Float64Array(D), i;
    layerNorm(x, t[p + "mlp.0.weight"], t[p + "mlp.0.bias"], h, D, this.eps);
    linear(t[p + "mlp.1.up.weight"], t[p + "mlp.1.up.bias"], h, u, D, F);
    for (i = 0; i < F; i++) u[i] = gelu(u[i]);
    linear(t[p + "mlp.1.down.weight"], t[p + "mlp.1.down.bias"], u, o, F, D);
    for (i = 0; i < D; i++) x[i] += o[i];
  };

  Model.prototype.head = function (x) {
    var t = this.t, h = new Float64Array(this.D);
    layerNorm(x, t["ln_f.weight"], t["ln_f.bias"], h, this.D, this.eps);
    return linear(t["unembed.weight"], t["unembed.bias"], h, new Float64Array(this.V), this.D, this.V);
  };

  // 不用缓存、整段重算（和 TinyTransformer.forward 一样按层处理全部位置，完整的 T × T 打分加因果掩码）。
  // 返回每个位置的 logits；测试用它核对带缓存的 step。
  Model.prototype.forward = function (tokens) {
    var D = this.D, H = this.H, dh = this.dh, t = this.t, n = tokens.length, eps = this.eps;
    if (n < 1 || n > this.T) throw new Error("序列长度应在 1 到 " + this.T + " 之间");
    var X = [], i, r, c, l, hd, d;
    for (r = 0; r < n; r++) {
      var row = new Float64Array(D);
      for (i = 0; i < D; i++) row[i] = t["embed.weight"][tokens[r] * D + i] + t["pos.embedding.weight"][r * D + i];
      X.push(row);
    }
    var scale = 1 / Math.sqrt(dh), h = new Float64Array(D);
    for (l = 0; l < this.L; l++) {
      var p = "blocks." + l + ".";
      var Q = X.map(function (x) {
        return linear(t[p + "attn.qkv.weight"], t[p + "attn.qkv.bias"],
          layerNorm(x, t[p + "ln.weight"], t[p + "ln.bias"], h, D, eps), new Float64Array(3 * D), D, 3 * D);
      });
      var Y = X.map(function () { return new Float64Array(D); });
      for (hd = 0; hd < H; hd++) {
        var off = hd * dh;
        for (r = 0; r < n; r++) {
          var w = new Float64Array(n);
          for (c = 0; c < n; c++) {
            if (c > r) { w[c] = -Infinity; continue; }  // 因果掩码：未来的位置
            var dot = 0;
            for (d = 0; d < dh; d++) dot += Q[r][off + d] * Q[c][D + off + d];
            w[c] = dot * scale;
          }
          softmaxInPlace(w, n);
          for (d = 0; d < dh; d++) {
            var acc = 0;
            for (c = 0; c < n; c++) acc += w[c] * Q[c][2 * D + off + d];
            Y[r][off + d] = acc;
          }
        }
      }
      for (r = 0; r < n; r++) {
        var o = linear(t[p + "attn.out.weight"], t[p + "attn.out.bias"], Y[r], new Float64Array(D), D, D);
        for (i = 0; i < D; i++) X[r][i] += o[i];
        if (this.F) this.mlp(p, X[r], h);
      }
    }
    var self = this;
    return X.map(function (x) { return self.head(x); });
  };

  // ------------------------------------------------------------------ 解码（同 code/sampling.py）
  // 温度和重复惩罚按 float32 取整（Math.fround），和 PyTorch 对 float32 张量做的除法、乘法逐位相同，
  // 于是 top-k 的并列、留下哪些词元也和它一致。
  function penalize(logits, previous, penalty) {
    var out = Float64Array.from(logits);
    if (penalty === 1) return out;
    var p = Math.fround(penalty);
    previous.forEach(function (id) {
      var v = logits[id];  // 从原始分数算：出现几次都只罚一次
      out[id] = v > 0 ? Math.fround(v / p) : Math.fround(v * p);
    });
    return out;
  }

  function argmax(a) {
    var best = 0;
    for (var i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
    return best;
  }

  function descending(a) {
    return Array.prototype.slice.call(a).sort(function (x, y) { return y - x; });
  }

  // 给定 logits（模型的原始打分）、前文的词元和设置，返回 {scores, before, after}：
  // before 是截断前的分布（惩罚、温度之后），after 是 top-k、top-p 之后真正用来抽签的分布。
  function distribution(logits, previous, s) {
    var V = logits.length, scores = penalize(logits, previous, s.penalty), i;
    if (s.greedy) {
      var before = softmaxInPlace(Float64Array.from(scores), V), after = new Float64Array(V);
      after[argmax(scores)] = 1;
      return { scores: scores, before: before, after: after };
    }
    var T = Math.fround(s.temperature), z = new Float64Array(V);
    for (i = 0; i < V; i++) z[i] = Math.fround(scores[i] / T);
    var full = softmaxInPlace(Float64Array.from(z), V);
    if (s.topK && s.topK < V) {
      var kth = descending(z)[s.topK - 1];
      for (i = 0; i < V; i++) if (z[i] < kth) z[i] = -Infinity;
    }
    if (s.topP && s.topP < 1) {
      var probs = softmaxInPlace(Float64Array.from(z), V), sorted = descending(probs), ahead = 0, keep = 0;
      while (keep < V && ahead < s.topP) { ahead += sorted[keep]; keep++; }  // 前面的加起来还不到 p 就留下
      var smallest = sorted[keep - 1];
      for (i = 0; i < V; i++) if (probs[i] < smallest) z[i] = -Infinity;
    }
    return { scores: scores, before: full, after: softmaxInPlace(z, V) };
  }

  // 可以设种子的随机数（mulberry32）：同一个种子抽出同样的序列
  function random(seed) {
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) >>> 0;
      var t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function draw(probs, rng) {
    var u = rng(), acc = 0, last = 0;
    for (var i = 0; i < probs.length; i++) {
      if (probs[i] <= 0) continue;
      acc += probs[i];
      last = i;
      if (u < acc) return i;
    }
    return last;
  }

  // 受约束的一步：不管模型的打分，写下 forced；own 是模型自己（惩罚、温度之前）给它的概率
  function force(logits, previous, s, forced) {
    var dist = distribution(logits, previous, s);
    dist.after = new Float64Array(logits.length);
    dist.after[forced] = 1;
    dist.chosen = forced;
    dist.forced = true;
    dist.own = softmaxInPlace(Float64Array.from(logits), logits.length)[forced];
    return dist;
  }

  function choose(logits, previous, s, rng) {
    var dist = distribution(logits, previous, s);
    dist.chosen = s.greedy ? argmax(dist.scores) : draw(dist.after, rng);
    return dist;
  }

  // 接着 ids 写 n 个词元（同 code/kv_cache.py 的 generate：先把提示送进缓存，最后一个词元不再送进模型）
  function generate(model, ids, n, s) {
    var cache = model.newCache(), logits = null, tokens = ids.slice(), rng = random(s.seed || 0);
    ids.forEach(function (id) { logits = model.step(cache, id); });
    for (var i = 0; i < n; i++) {
      var dist = choose(logits, tokens, s, rng);
      tokens.push(dist.chosen);
      if (i < n - 1) logits = model.step(cache, dist.chosen);
    }
    return tokens;
  }

  // ------------------------------------------------------------------ 载入：说明文件、权重、摘要
  var models = {};

  function hex(buffer) {
    return Array.prototype.map.call(new Uint8Array(buffer), function (b) { return (b < 16 ? "0" : "") + b.toString(16); })
      .join("");
  }

  function fail(kind, message) {
    var error = new Error(message);
    error.kind = kind;
    return error;
  }

  // 返回 Promise<{model, verified, seconds}>；同一个地址只下载一次（换页回来不再下载）
  function load(headerUrl) {
    if (models[headerUrl]) return models[headerUrl];
    var started = performance.now(), header = null, weightsAt = 0, verified = false;
    var promise = fetch(headerUrl, { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) throw fail("header", "模型的说明文件没有下载成功（HTTP " + response.status + "）");
      return response.json();
    }, function () {
      throw fail("header", "模型的说明文件没有下载成功（网络出错）");
    }).then(function (data) {
      header = data;
      var url = new URL(header.weights.file, headerUrl).href;
      return fetch(url, { credentials: "same-origin" }).then(function (response) {
        if (!response.ok) throw fail("weights", "权重文件没有下载成功（HTTP " + response.status + "）");
        return response.arrayBuffer();
      }, function () {
        throw fail("weights", "权重文件没有下载成功（网络出错）");
      });
    }).then(function (buffer) {
      weightsAt = performance.now();
      if (buffer.byteLength !== header.weights.bytes) {
        throw fail("digest", "权重文件的大小不对：应有 " + header.weights.bytes + " 字节，收到 " + buffer.byteLength +
          " 字节。文件可能没有下载完整，模型没有运行。");
      }
      var subtle = window.crypto && window.crypto.subtle;
      if (!subtle) return buffer;  // 不是安全上下文（例如用 http 打开的局域网地址）：核对不了，如实说明
      return subtle.digest("SHA-256", buffer).then(function (digest) {
        if (hex(digest) !== header.weights.sha256) {
          throw fail("digest", "权重文件的 SHA-256 和说明文件里记下的不一致：文件可能损坏或被改过，模型没有运行。");
        }
        verified = true;
        return buffer;
      });
    }).then(function (buffer) {
      var model = new Model(header, buffer);
      return { model: model, verified: verified, seconds: (performance.now() - started) / 1000,
        weightsAt: weightsAt, readyAt: performance.now() };
    });
    models[headerUrl] = promise;
    promise.catch(function () { delete models[headerUrl]; });  // 失败了，下次按按钮重新下载
    return promise;
  }

  // ------------------------------------------------------------------ 藏头诗（同 code/acrostic.py）
  // 说明文件里的任务；没有、或不认识的 kind，就是普通的续写演示
  function acrosticTask(header) {
    var t = header.task;
    return t && t.kind === "acrostic" ? t : null;
  }

  // 按句末标点切开，去掉空段，每段的第一个字（按码位）：前 n 句的句首（line_heads / written_heads）
  function writtenHeads(poem, ends, n) {
    var out = [], line = [];
    Array.from(poem.split("\n")[0]).concat([ends[0]]).forEach(function (ch) {
      if (ends.indexOf(ch) < 0) { line.push(ch); return; }
      if (line.length) out.push(line[0]);
      line = [];
    });
    return out.slice(0, n);
  }

  // 格式对不对（well_formed）：到第一个换行为止，恰好 n 句、每句 k 个汉字（U+4E00–U+9FFF），句末依次是「，。，。」
  function wellFormed(poem, task) {
    var cps = Array.from(poem.split("\n")[0]), pos = 0, ends = Array.from(task.line_ends);
    for (var line = 0; line < task.heads; line++) {
      for (var j = 0; j < task.line_chars; j++, pos++) {
        var cp = pos < cps.length ? cps[pos].codePointAt(0) : 0;
        if (cp < 0x4e00 || cp > 0x9fff) return false;
      }
      if (cps[pos++] !== ends[line % ends.length]) return false;
    }
    return pos === cps.length;
  }

  // 检查读者输入的藏头：恰好 n 个字（按码位），每个字在词表里、不是标点或空白。返回 {ids} 或 {error}
  var NOT_A_HEAD = /[\p{P}\p{S}\p{Z}\p{C}]/u;
  function checkHeads(model, task, raw) {
    var chars = Array.from(raw), n = task.heads;
    if (!chars.length) return { error: "请输入 " + n + " 个字作藏头（现在是空的）。" };
    if (chars.length !== n) return { error: "藏头要恰好 " + n + " 个字，现在是 " + chars.length + " 个。" };
    var shown = function (ch) {
      return NOT_A_HEAD.test(ch) && !/\p{P}/u.test(ch) ? "U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")
        : "「" + ch + "」";
    };
    var marks = chars.filter(function (ch) { return NOT_A_HEAD.test(ch) || task.line_ends.indexOf(ch) >= 0; });
    if (marks.length) return { error: marks.map(shown).join("") + " 是标点、符号或空白：藏头的每一个都要是字。" };
    var unknown = chars.filter(function (ch) { return !model.ids.has(ch); });
    if (unknown.length) {
      return { error: unknown.map(shown).join("") + " 不在模型的词表里，模型写不出来。词表来自繁体的唐诗语料：试试繁体字（例如「" +
        task.example + "」）。" };
    }
    return { ids: chars.map(function (ch) { return model.ids.get(ch); }) };
  }

  function formName(task) {  // 每句 5 个字、4 句：「五言四句」
    var digits = "〇一二三四五六七八九";
    return digits[task.line_chars] + "言" + digits[task.heads] + "句";
  }

  // 逐句的句首（同 head_hits 逐句比较）：在 parent 里写一个列表，每句一项（✓ 对上、✗ 没对上）；返回对上了几句
  function headMarks(parent, heads, poem, task, label) {
    var wanted = Array.from(heads), got = writtenHeads(poem, task.line_ends, task.heads), hits = 0;
    var list = el("ul", { "class": "llm-pg__lines", "aria-label": label }, parent);
    wanted.forEach(function (ch, i) {
      var ok = got[i] === ch;
      if (ok) hits++;
      el("li", { "class": ok ? "is-hit" : "is-miss" }, list, ch + (ok ? " ✓" : " ✗") + "（第 " + (i + 1) + " 句" +
        (got[i] === undefined ? "没写到）" : "写的是「" + got[i] + "」）"));
    });
    return hits;
  }

  function probText(p) { return p >= 0.001 ? p.toFixed(3) : p.toExponential(1); }

  // ------------------------------------------------------------------ 页面
  var counter = 0;
  var reduceMotion = window.matchMedia ? window.matchMedia("(prefers-reduced-motion: reduce)") : { matches: false };

  function el(tag, attrs, parent, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  function field(parent, id, label, input, hint) {
    var box = el("div", { "class": "llm-pg__field" }, parent);
    el("label", { "for": id }, box, label);
    box.appendChild(input);
    if (hint) el("span", { "class": "llm-pg__hint", id: id + "-hint" }, box, hint);
    if (hint) input.setAttribute("aria-describedby", id + "-hint");
    return box;
  }

  // 按下「载入模型」之后：下载、核对、搭界面。并排比较（data-llm-compare）的几个模型一起下载，各自核对 SHA-256
  function mount(box) {
    var compare = box.hasAttribute("data-llm-compare");
    var specs = compare ? Array.prototype.map.call(box.querySelectorAll("[data-llm-model]"), function (node) {
      return { name: node.getAttribute("data-llm-model"), label: node.getAttribute("data-llm-label"),
        url: new URL(node.getAttribute("data-llm-header"), document.baseURI).href };
    }) : [{ url: new URL(box.getAttribute("data-llm-header"), document.baseURI).href }];
    var start = box.querySelector(".llm-pg__start");
    var status = start ? start.querySelector(".llm-pg__status") : null;
    var button = start ? start.querySelector("button") : null;
    if (status) status.textContent = compare ? "正在下载 " + specs.length + " 个模型的权重……" : "正在下载模型的权重……";
    box.setAttribute("aria-busy", "true");
    var loads = specs.map(function (spec) {
      return load(spec.url).catch(function (error) {
        if (compare && error.kind) error.message = "「" + spec.label + "」模型：" + error.message;
        throw error;
      });
    });
    return Promise.all(loads).then(function (loaded) {
      box.removeAttribute("aria-busy");
      box.removeAttribute("data-llm-pg-error");
      if (!box.isConnected) return;
      var focused = start && start.contains(document.activeElement);
      if (start) start.remove();
      if (compare) buildCompare(box, specs, loaded); else build(box, loaded[0]);
      if (focused) box.querySelector("[id$=-prompt]").focus();  // 按钮没了：焦点交给提示框，键盘用户接着输入
    }, function (error) {
      box.removeAttribute("aria-busy");
      box.setAttribute("data-llm-pg-error", error.kind || "load");
      if (status) status.textContent = (error.kind ? error.message : "模型没有载入：" + error.message) +
        " 页面的其余部分照常可用；可以按「重新载入」再试一次。";
      if (button) button.textContent = "重新载入";
    });
  }

  // 并排比较：一组藏头，几个模型各自贪心解码写一首（同 kv_cache.generate，不强制句首），每首下面是逐句的句首和
  // 一行分数（句首 n/4，格式 对/错：同 verifiers.py 的藏头、格式两个验证器）。模型一个一个算，中间把页面让出来
  function buildCompare(box, specs, loaded) {
    var models = loaded.map(function (l) { return l.model; }), model = models[0], id = "llm-pg-" + (++counter);
    var task = acrosticTask(model.header);
    var root = el("div", { "class": "llm-pg__app" }, box);
    if (!task) { el("p", { "class": "llm-pg__error" }, root, "这几个模型没有藏头诗的任务，不能并排比较。"); return; }
    var verified = loaded.every(function (l) { return l.verified; });
    el("p", { "class": "llm-pg__info" }, root, specs.length + " 个模型已载入：各 " +
      model.header.params.toLocaleString("zh-CN") + " 个参数，" + model.L + " 层 × " + model.H + " 个头，同一个词表（" +
      model.V + " 项）。" + (verified ? "每个模型权重的 SHA-256 都已核对。"
        : "这个浏览器不提供 SubtleCrypto（页面不在安全上下文里），权重的 SHA-256 没有核对。"));

    var form = el("form", { "class": "llm-pg__form", "aria-label": "并排比较的设置" }, root);
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    var input = el("input", { type: "text", id: id + "-prompt", "class": "llm-pg__heads", autocomplete: "off",
      spellcheck: "false", lang: "zh" });
    input.value = task.example;
    var headsField = field(form, id + "-prompt", "藏头（" + task.heads + " 个字）", input, "每个模型都用这 " + task.heads +
      " 个字作藏头，各自贪心解码（每步取分数最高的字，不强制句首）；按 Enter 或「生成」。");
    var error = el("p", { "class": "llm-pg__error", id: id + "-prompt-error", role: "alert" }, headsField);
    input.setAttribute("aria-describedby", id + "-prompt-hint " + id + "-prompt-error");
    var buttons = el("div", { "class": "llm-pg__buttons" }, form);
    var genButton = el("button", { type: "button", "class": "llm-pg__btn llm-pg__btn--primary" }, buttons, "生成");
    input.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && !event.isComposing) { event.preventDefault(); genButton.click(); }
    });

    var grid = el("ul", { "class": "llm-pg__columns", "aria-label": specs.length + " 个模型写的诗" }, root);
    var columns = specs.map(function (spec, k) {
      var item = el("li", { "class": "llm-pg__column", "data-llm-model": spec.name }, grid);
      el("p", { "class": "llm-pg__subtitle" }, item, spec.label);
      var poem = el("p", { "class": "llm-pg__poem" }, item);
      var marks = el("div", { "class": "llm-pg__verdict" }, item);
      var score = el("p", { "class": "llm-pg__score" }, item);
      return { spec: spec, model: models[k], poem: poem, marks: marks, score: score, result: null };
    });
    var live = el("div", { "class": "llm-pg__sr", role: "status", "aria-live": "polite" }, root);
    var running = false;

    function clear() {
      columns.forEach(function (c) {
        c.result = null;
        c.poem.textContent = "";
        c.marks.textContent = "";
        c.score.textContent = "";
      });
    }

    function draw(c, heads) {
      var poem = c.model.decode(c.result.tokens.slice(c.result.prompt)).split("\n")[0];
      c.poem.textContent = poem;
      c.marks.textContent = "";
      var hits = headMarks(c.marks, heads, poem, task, c.spec.label + "：逐句的句首");
      var form = wellFormed(poem, task);
      c.score.textContent = "句首 " + hits + "/" + task.heads + "，格式 " + (form ? "对" : "错");
      return c.spec.label + "：" + c.score.textContent;
    }

    genButton.addEventListener("click", function () {
      if (running) return;
      var raw = input.value, checked = null;
      for (var k = 0; k < models.length && !(checked && checked.error); k++) checked = checkHeads(models[k], task, raw);
      error.textContent = checked.error || "";
      clear();
      if (checked.error) {
        input.setAttribute("aria-invalid", "true");
        live.textContent = "";  // 原因由输入框下的提示（role=alert）播报
        return;
      }
      input.removeAttribute("aria-invalid");
      running = true;
      genButton.setAttribute("aria-disabled", "true");  // 不用 disabled：焦点留在按钮上
      box.setAttribute("data-llm-pg-state", "running");
      var prompt = task.template.split("{heads}").join(raw), summaries = [], k2 = 0;
      var next = function () {
        if (!box.isConnected) { running = false; return; }  // 读者换了页
        var c = columns[k2], ids = c.model.encode(prompt);
        c.result = { prompt: ids.length, tokens: generate(c.model, ids, task.tokens, { greedy: true, penalty: 1 }) };
        summaries.push(draw(c, raw));
        if (++k2 < columns.length) { window.setTimeout(next, 0); return; }
        running = false;
        genButton.removeAttribute("aria-disabled");
        box.setAttribute("data-llm-pg-state", "idle");
        live.textContent = "写完了。" + summaries.join("；") + "。";
      };
      window.setTimeout(next, 0);
    });

    live.textContent = specs.length + " 个模型已载入，可以生成了";
    box.setAttribute("data-llm-pg-state", "idle");
    box.llmPlayground = { results: function () {
      return columns.map(function (c) { return { name: c.spec.name, result: c.result }; });
    } };
  }

  function build(box, loaded) {
    var model = loaded.model, id = "llm-pg-" + (++counter), T = model.T;
    var root = el("div", { "class": "llm-pg__app" }, box);
    el("p", { "class": "llm-pg__info" }, root, "模型已载入：" + model.header.params.toLocaleString("zh-CN") + " 个参数，" +
      model.L + " 层 × " + model.H + " 个头，上下文 " + T + " 个词元，词表 " + model.V + "（其中 " + N_BYTES + " 个字节词元）。" +
      (loaded.verified ? "权重的 SHA-256 已核对。" : "这个浏览器不提供 SubtleCrypto（页面不在安全上下文里），权重的 SHA-256 没有核对。"));

    var form = el("form", { "class": "llm-pg__form", "aria-label": "模型演示的设置" }, root);
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    var task = acrosticTask(model.header), prompt, headsError = null, forcedBox = null, endIds = null;
    if (task) {
      prompt = el("input", { type: "text", id: id + "-prompt", "class": "llm-pg__heads", autocomplete: "off",
        spellcheck: "false", lang: "zh" });
      prompt.value = task.example;
      var headsField = field(form, id + "-prompt", "藏头（" + task.heads + " 个字）", prompt, "每句的第一个字，连起来是这 " +
        task.heads + " 个字；按 Enter 或「生成」。");
      headsError = el("p", { "class": "llm-pg__error", id: id + "-prompt-error", role: "alert" }, headsField);
      prompt.setAttribute("aria-describedby", id + "-prompt-hint " + id + "-prompt-error");
      prompt.addEventListener("keydown", function (event) {
        if (event.key === "Enter" && !event.isComposing) { event.preventDefault(); genButton.click(); }
      });
      forcedBox = el("input", { type: "checkbox", id: id + "-forced", "aria-describedby": id + "-forced-hint" });
      field(form, id + "-forced", "强制句首（受约束的解码）", forcedBox).classList.add("llm-pg__check");
      el("p", { "class": "llm-pg__hint", id: id + "-forced-hint" }, form, "勾选后，每句开头（提示之后、每个「" +
        Array.from(task.line_ends).join("」「") + "」之后，直到第 " + task.heads + " 句）不管模型想写什么，直接写下藏头的字：" +
        "句首是解码时强加的，不是模型学会的。");
      endIds = Array.from(task.line_ends).map(function (ch) { return model.ids.get(ch); });
    } else {
      prompt = el("textarea", { id: id + "-prompt", rows: "2", spellcheck: "false" });
      prompt.value = "床前";
      field(form, id + "-prompt", "提示（一首诗的开头；空着就从换行写起）", prompt);
    }

    var buttons = el("div", { "class": "llm-pg__buttons" }, form);
    var genButton = el("button", { type: "button", "class": "llm-pg__btn llm-pg__btn--primary" }, buttons, "生成");
    var stepButton = el("button", { type: "button", "class": "llm-pg__btn" }, buttons, "单步");
    var stopButton = el("button", { type: "button", "class": "llm-pg__btn", disabled: "" }, buttons, "停止");

    var knobs = el("div", { "class": "llm-pg__knobs" }, form);
    function range(key, label, min, max, step, value, hint) {
      var input = el("input", { type: "range", id: id + "-" + key, min: String(min), max: String(max), step: String(step),
        value: String(value) });
      var f = field(knobs, id + "-" + key, label, input, hint);
      var out = el("output", { "for": id + "-" + key, "class": "llm-pg__value", "aria-hidden": "true" }, f.firstChild);
      var sync = function () { out.textContent = input.value; input.setAttribute("aria-valuetext", input.value); };
      input.addEventListener("input", sync);
      sync();
      return input;
    }
    function number(key, label, min, max, value, hint) {
      var input = el("input", { type: "number", id: id + "-" + key, min: String(min), max: String(max), step: "1",
        value: String(value), inputmode: "numeric" });
      field(knobs, id + "-" + key, label, input, hint);
      return input;
    }
    var temperature = range("temperature", "温度", 0.1, 2, 0.1, 0.8);
    var greedyBox = el("input", { type: "checkbox", id: id + "-greedy" });
    field(knobs, id + "-greedy", "贪心（每步取分数最高的）", greedyBox).classList.add("llm-pg__check");
    var topK = number("topk", "top-k", 0, model.V, 0, "0 表示不截断");
    var topP = range("topp", "top-p", 0.05, 1, 0.05, 1, "1 表示不截断");
    var penalty = range("penalty", "重复惩罚", 1, 2, 0.05, 1, "1 表示不惩罚");
    var seed = number("seed", "种子", 0, 4294967295, 1);
    var count = number("count", "一次写几个词元", 1, T, task ? task.tokens : 24);
    if (task) greedyBox.checked = true;  // 文章按贪心解码评估藏头诗

    var note = el("p", { "class": "llm-pg__note", id: id + "-note" }, root);
    var text = el("p", { "class": "llm-pg__text", id: id + "-text" }, root);
    var verdict = task ? el("div", { "class": "llm-pg__verdict" }, root) : null;
    var speed = el("p", { "class": "llm-pg__speed" }, root, "速度：还没有生成");
    var live = el("div", { "class": "llm-pg__sr", role: "status", "aria-live": "polite" }, root);

    var chartBox = el("div", { "class": "llm-pg__chart" }, root);
    el("p", { "class": "llm-pg__subtitle", id: id + "-chart-title" }, chartBox, "下一个词元：概率最高的 10 个");
    var table = el("table", { "class": "llm-pg__table", "aria-labelledby": id + "-chart-title" }, chartBox);
    var head = el("tr", {}, el("thead", {}, table));
    ["词元", "截断前", "截断后（抽签用）"].forEach(function (h) { el("th", { scope: "col" }, head, h); });
    var tbody = el("tbody", {}, table);
    var chartNote = el("p", { "class": "llm-pg__hint" }, chartBox, "按「生成」或「单步」之后，这里显示每一步的候选。");

    var attBox = el("div", { "class": "llm-pg__attention" }, root);
    el("p", { "class": "llm-pg__subtitle" }, attBox, "注意力：选一层、一个头");
    var attControls = el("div", { "class": "llm-pg__knobs" }, attBox);
    function select(key, label, n, name) {
      var s = el("select", { id: id + "-" + key });
      for (var i = 0; i < n; i++) el("option", { value: String(i) }, s, name.replace("#", String(i)));
      field(attControls, id + "-" + key, label, s);
      return s;
    }
    var layer = select("layer", "层（从 0 数起）", model.L, "第 # 层");
    var headSel = select("head", "头（从 0 数起）", model.H, "头 #");
    var attNote = el("p", { "class": "llm-pg__hint" }, attBox);
    var attPlot = el("div", { "class": "llm-ix llm-ix--heatmap llm-pg__heat" }, attBox);

    var session = null, running = false, stopRequested = false, lastDraw = 0;

    function settings() {
      var k = Math.max(0, Math.min(model.V, Math.round(+topK.value) || 0));
      var sd = Math.max(0, Math.min(4294967295, Math.round(+seed.value) || 0));
      return { greedy: greedyBox.checked, temperature: +temperature.value, topK: k, topP: +topP.value,
        penalty: +penalty.value, seed: sd };
    }

    function syncGreedy() {
      [temperature, topK, topP, seed].forEach(function (input) { input.disabled = greedyBox.checked; });
    }
    greedyBox.addEventListener("change", syncGreedy);

    function clearOutput() {
      text.textContent = "";
      tbody.textContent = "";
      note.textContent = "";
      chartNote.textContent = "按「生成」或「单步」之后，这里显示每一步的候选。";
      speed.textContent = "速度：还没有生成";
      if (verdict) verdict.textContent = "";
      drawAttention();
    }

    // 提示 → 编号。空提示从换行写起；太长就从前面整字整字地去掉，只留最后 T 个词元以内。
    // 藏头诗：先检查藏头，不对就显示原因、不生成（返回 false）；对了就把它填进模板
    function startSession() {
      var raw = prompt.value, notes = [], heads = null;
      if (task) {
        var checked = checkHeads(model, task, raw);
        headsError.textContent = checked.error || "";
        if (checked.error) {
          prompt.setAttribute("aria-invalid", "true");
          session = null;
          clearOutput();
          live.textContent = "";  // 原因由输入框下的提示（role=alert）播报
          return false;
        }
        prompt.removeAttribute("aria-invalid");
        heads = checked.ids;
        raw = task.template.split("{heads}").join(raw);
      } else if (!raw.length) { raw = "\n"; notes.push("提示是空的：从换行（一首诗的开头）写起。"); }
      var ids = model.encode(raw), chars = Array.from(raw), cut = 0;
      while (ids.length > T) { chars.shift(); cut++; ids = model.encode(chars.join("")); }
      if (cut) {
        notes.push("提示超过了模型的上下文（" + T + " 个词元）：去掉了开头的 " + cut + " 个字符，只用最后 " + ids.length +
          " 个词元。");
      }
      note.textContent = notes.join("");
      var cache = model.newCache(), t0 = performance.now(), logits = null;
      ids.forEach(function (tok) { logits = model.step(cache, tok); });
      session = { raw: prompt.value, prompt: ids.length, tokens: ids.slice(), cache: cache, logits: logits,
        rng: random(settings().seed), prefillMs: performance.now() - t0, computeMs: 0, made: 0, last: null,
        heads: heads, lines: 0, lineStart: true };  // 藏头诗：已经开了几句头、下一步是不是句首
      return true;
    }

    function full() { return session.tokens.length > T || (session.cache.length >= T && session.logits === null); }

    // 写一个词元：从当前的 logits 选出来，再送进模型算下一步的 logits（写满了就不再送）
    // 藏头诗：句首（第一步、每个句末标点之后，直到第 n 句）勾了「强制句首」就写藏头的字（同 write_forced_acrostic）
    function one() {
      var t0 = performance.now(), s = settings(), k = session.lines, dist;
      var atHead = session.heads !== null && session.lineStart && k < task.heads;
      if (atHead) session.lines++;
      dist = atHead && forcedBox.checked ? force(session.logits, session.tokens, s, session.heads[k])
        : choose(session.logits, session.tokens, s, session.rng);
      if (session.heads) session.lineStart = endIds.indexOf(dist.chosen) >= 0;
      session.tokens.push(dist.chosen);
      session.logits = session.cache.length < T ? model.step(session.cache, dist.chosen) : null;
      session.computeMs += performance.now() - t0;
      session.made++;
      session.last = dist;
      return dist;
    }

    function pieces() {  // 生成的部分按显示的单位分段：连续的字节词元拼成一段
      var out = [], run = [];
      for (var i = session.prompt; i < session.tokens.length; i++) {
        var tok = session.tokens[i];
        if (tok < N_BYTES) { run.push(tok); continue; }
        if (run.length) { out.push(model.decode(run)); run = []; }
        out.push(model.decode([tok]));
      }
      if (run.length) out.push(model.decode(run));
      return out;
    }

    function drawText() {
      text.textContent = "";
      el("span", { "class": "llm-pg__prompt" }, text, model.decode(session.tokens.slice(0, session.prompt)));
      var parts = pieces();
      parts.forEach(function (part, i) {
        el("span", { "class": "llm-pg__gen" + (i === parts.length - 1 ? " is-last" : "") }, text, part);
      });
    }

    function drawChart() {
      var dist = session.last;
      tbody.textContent = "";
      if (!dist) return;
      var order = Array.from(dist.before.keys()).sort(function (a, b) { return dist.before[b] - dist.before[a]; });
      var rows = order.slice(0, 10);
      if (rows.indexOf(dist.chosen) < 0) rows.push(dist.chosen);
      var top = 0;  // 条的长度按表里最大的概率缩放：小的概率也看得出差别
      rows.forEach(function (tok) { top = Math.max(top, dist.before[tok], dist.after[tok]); });
      rows.forEach(function (tok) {
        var tr = el("tr", { "class": tok === dist.chosen ? "is-chosen" + (dist.forced ? " is-forced" : "") : "" }, tbody);
        var name = el("th", { scope: "row" }, tr);
        el("span", { "class": "llm-pg__tok" }, name, model.tokenText(tok));
        if (tok === dist.chosen) el("span", { "class": "llm-pg__mark" }, name, dist.forced ? "◀ 强制" : "◀ 抽中");
        [dist.before[tok], dist.after[tok]].forEach(function (p, k) {
          var td = el("td", {}, tr);
          var bar = el("span", { "class": "llm-pg__bar" + (k ? " llm-pg__bar--after" : "") }, td);
          bar.style.width = (top > 0 ? p / top * 100 : 0).toFixed(1) + "%";
          el("span", { "class": "llm-pg__num" }, td, p.toFixed(3));
        });
      });
      var kept = 0;
      for (var i = 0; i < dist.after.length; i++) if (dist.after[i] > 0) kept++;
      chartNote.textContent = dist.forced
        ? "这一步是句首：强制写下「" + model.tokenText(dist.chosen) + "」，不是模型选的；模型自己给它的概率是 " +
          probText(dist.own) + "。"
        : settings().greedy
        ? "贪心：直接取分数最高的词元。"
        : "截断后留下 " + kept + " 个词元，按截断后的概率抽签。";
      chartNote.textContent += "条的长度按表中最大的概率（" + top.toFixed(3) + "）缩放。";
    }

    // 藏头诗的判定：逐句比较句首（head_hits），再看格式（well_formed）。返回一句总结，也用于读屏的播报
    function drawVerdict() {
      if (!verdict) return "";
      verdict.textContent = "";
      if (!session || !session.made) return "";
      var poem = model.decode(session.tokens.slice(session.prompt)).split("\n")[0];
      var hits = headMarks(verdict, session.raw, poem, task, "逐句的句首");
      var form = wellFormed(poem, task);
      var summary = task.heads + " 句中对上了 " + hits + " 句；格式" + (form ? "是" : "不是") + formName(task) + "。";
      el("p", { "class": "llm-pg__summary" }, verdict, summary + (session.lines && forcedBox.checked
        ? "（句首是强制写下的：看看强制之后，后面的字接得顺不顺。）" : ""));
      return summary;
    }

    var WINDOW = 32;  // 热力图最多画最后 32 个位置
    function drawAttention() {
      attPlot.textContent = "";
      if (!session || !session.cache.length) { attNote.textContent = "生成之后，这里画出所选的头在已有文字上的注意力。"; return; }
      if (!window.llmFigures || !window.llmFigures.heatmap) { attNote.textContent = "画热力图的脚本没有载入。"; return; }
      var n = session.cache.length, from = Math.max(0, n - WINDOW), rows = session.cache.attn[+layer.value][+headSel.value];
      var labels = [], ticks = [], values = [];
      for (var i = from; i < n; i++) {
        var tok = session.cache.tokens[i], shown = model.tokenText(tok);
        labels.push(i + "「" + shown + "」");
        ticks.push(tok < N_BYTES ? tok.toString(16).toUpperCase() : shown === "换行" ? "↵" : shown === "空格" ? "␣" : shown);
        var row = new Array(n - from).fill(0);
        for (var j = from; j <= i; j++) row[j - from] = rows[i][j];
        values.push(row);
      }
      attNote.textContent = "第 " + layer.value + " 层头 " + headSel.value + "：每一行是一个位置（查询）分给前面各位置（键）的权重。" +
        (from ? "只画出最后 " + WINDOW + " 个位置，更早的位置分到的权重不在图里。" : "");
      var show = window.llmFigures.heatmap({ rows: labels, cols: labels, ticks: ticks, row_name: "查询", col_name: "键",
        value_name: "注意力权重", vmin: 0, vmax: 1 }, attPlot, id + "-att-" + n);
      show({ values: values, causal: true });
    }
    layer.addEventListener("change", drawAttention);
    headSel.addEventListener("change", drawAttention);

    function drawSpeed() {
      var made = session.made;
      speed.textContent = made ? "速度：每秒 " + Math.round(made / Math.max(session.computeMs, 1e-3) * 1000) +
        " 个词元（只算模型的计算，不含画图；提示 " + session.prompt + " 个词元先送进缓存，用了 " +
        session.prefillMs.toFixed(1) + " ms）" : "速度：还没有生成";
    }

    function drawAll(withAttention) {
      drawText();
      drawChart();
      drawSpeed();
      drawVerdict();
      if (withAttention) drawAttention();
    }

    function setRunning(on) {
      running = on;
      genButton.disabled = on;
      stepButton.disabled = on;
      stopButton.disabled = !on;
      box.setAttribute("data-llm-pg-state", on ? "running" : "idle");
    }

    function finish(message) {
      setRunning(false);
      drawAll(true);
      live.textContent = message + (task ? "。" + drawVerdict() : "");
      if (document.activeElement === stopButton || document.activeElement === document.body) genButton.focus();
    }

    function limitNote() {
      var full = "已经写满了模型的上下文（" + T + " 个位置），不能再往下写；改一改提示再试。";
      if (note.textContent.indexOf(full) < 0) note.textContent += full;
    }

    genButton.addEventListener("click", function () {
      if (running) return;
      if (!startSession()) return;
      var target = Math.max(1, Math.min(T, Math.round(+count.value) || 24));
      stopRequested = false;
      setRunning(true);
      drawAll(false);
      var loop = function () {
        if (!box.isConnected) { running = false; return; }  // 读者换了页
        var sliceEnd = performance.now() + 12;  // 每帧算 12 ms，留时间给页面和「停止」按钮
        while (!stopRequested && session.made < target && !full() && performance.now() < sliceEnd) one();
        var now = performance.now();
        if (stopRequested || session.made >= target || full()) {
          if (full() && session.made < target) limitNote();
          return finish((stopRequested ? "已停止，" : "写完了，") + "写了 " + session.made + " 个词元：" + pieces().join(""));
        }
        drawAll(!reduceMotion.matches && now - lastDraw > 250);
        if (now - lastDraw > 250) lastDraw = now;
        window.requestAnimationFrame(loop);
      };
      window.requestAnimationFrame(loop);
    });

    stepButton.addEventListener("click", function () {
      if (running) return;
      if ((!session || session.raw !== prompt.value) && !startSession()) return;
      if (full()) { limitNote(); live.textContent = "已经写满了上下文，不能再往下写"; return; }
      var dist = one();
      drawAll(true);
      live.textContent = "下一个词元：" + model.tokenText(dist.chosen);
    });

    stopButton.addEventListener("click", function () { stopRequested = true; });

    syncGreedy();
    drawAttention();
    live.textContent = "模型已载入，可以生成了";
    box.setAttribute("data-llm-pg-state", "idle");
    box.llmPlayground = { session: function () { return session; }, firstTokenMs: loaded.readyAt - loaded.weightsAt };
  }

  window.llmPlayground = {
    mount: mount,
    load: load,
    Model: Model,
    distribution: distribution,
    generate: generate,
    random: random,
    erf: erf
  };
})();
