// Parse every mermaid diagram given as a file argument with the real mermaid parser; exit 1 on the
// first one it rejects (printing mermaid's own message), 0 when all parse. mermaid sanitises
// labels with DOMPurify, which needs a DOM: jsdom provides one, nothing is rendered.
import { readFileSync } from 'node:fs';
import { JSDOM } from 'jsdom';

const dom = new JSDOM('');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node check.mjs FILE...');
  process.exit(2);
}
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  try {
    const r = await mermaid.parse(text);
    console.log(`${file}: ${r.diagramType}`);
  } catch (e) {
    console.error(`${file}: mermaid rejected the diagram: ${e.message ?? e}`);
    process.exit(1);
  }
}
