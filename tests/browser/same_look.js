// Marks, with data-llm-same-look, every element whose text looks exactly like text already seen on the page, so
// that axe's colour-contrast rule checks each look once (tests/browser/test_accessibility.py: contrast_by_look).
//
// axe decides an element's contrast from its own colour, size, weight and shadow and from the backgrounds behind
// it. Two elements share a look when all of those are equal: their own computed text style, and for every ancestor
// up to <html> its background (colour, image, the ::before and ::after boxes), opacity, filter, blend mode and
// position. Backgrounds that are not ancestors can only lie behind text through positioning, so an element that
// is positioned itself, or whose box meets a positioned element that is not its ancestor or descendant, is never
// marked: it is always checked. Returns [looks, marked].
() => {
  const textOf = (el) => [...el.childNodes].some((n) => n.nodeType === 3 && n.data.trim());
  const behind = new Map();
  const backgrounds = (el) => {
    if (!el) return '';
    if (behind.has(el)) return behind.get(el);
    const s = getComputedStyle(el);
    const boxes = ['::before', '::after'].map((p) => {
      const b = getComputedStyle(el, p);
      return b.content === 'none' ? '' : `${b.backgroundColor} ${b.backgroundImage} ${b.opacity}`;
    });
    const own = [s.backgroundColor, s.backgroundImage, s.opacity, s.filter, s.mixBlendMode, s.position, ...boxes];
    const key = `${own.join(',')}|${backgrounds(el.parentElement)}`;
    behind.set(el, key);
    return key;
  };
  const all = [...document.querySelectorAll('body *')];
  const placed = all
    .filter((e) => !['static', 'relative'].includes(getComputedStyle(e).position))
    .map((e) => [e, e.getBoundingClientRect()])
    .filter(([, r]) => r.width > 0 && r.height > 0);
  const overlapped = (el) => {
    const r = el.getBoundingClientRect();
    return placed.some(([p, q]) => !p.contains(el) && !el.contains(p)
      && q.left < r.right && r.left < q.right && q.top < r.bottom && r.top < q.bottom);
  };
  const seen = new Set();
  let marked = 0;
  for (const el of all) {
    if (!textOf(el)) continue;
    const s = getComputedStyle(el);
    if (!['static', 'relative'].includes(s.position) || overlapped(el)) continue;
    const look = [s.color, s.fontSize, s.fontWeight, s.textShadow, s.webkitTextFillColor, s.webkitTextStroke,
      s.visibility, s.opacity, backgrounds(el)].join(';');
    if (seen.has(look)) {
      el.setAttribute('data-llm-same-look', '');
      marked += 1;
    } else {
      seen.add(look);
    }
  }
  return [seen.size, marked];
}
