// Just enough XML for nvidia-smi's report (elements, attributes, text; no namespaces, no mixed content to speak of):
// the agent takes no XML library for one well-formed document whose DTD NVIDIA publishes.

export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  text: string;
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
const decode = (text: string) => text.replace(/&(lt|gt|amp|quot|apos);/g, (_, name: string) => ENTITIES[name]!);

export function parseXml(text: string): XmlElement {
  const root: XmlElement = { name: '#document', attributes: {}, children: [], text: '' };
  const stack = [root];
  // Declarations, DOCTYPE and comments are skipped; every other tag opens, closes or is self-closed.
  const token = /<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<!DOCTYPE[^>]*>|<\/([^\s>]+)\s*>|<([^\s/>]+)([^>]*?)(\/?)>|([^<]+)/g;
  for (const match of text.matchAll(token)) {
    const [, closing, opening, attributeText, selfClosing, textRun] = match;
    const top = stack.at(-1)!;
    if (textRun !== undefined) top.text += decode(textRun);
    else if (closing !== undefined) {
      if (top.name !== closing) throw new Error(`XML: </${closing}> closes <${top.name}>`);
      top.text = top.text.trim();
      stack.pop();
    } else if (opening !== undefined) {
      const attributes: Record<string, string> = {};
      for (const [, key, value] of (attributeText ?? '').matchAll(/([^\s=]+)\s*=\s*"([^"]*)"/g)) attributes[key!] = decode(value!);
      const element: XmlElement = { name: opening, attributes, children: [], text: '' };
      top.children.push(element);
      if (!selfClosing) stack.push(element);
    }
  }
  if (stack.length !== 1) throw new Error(`XML: <${stack.at(-1)!.name}> is never closed`);
  return root;
}

/** The first element at this path of child names, if any. */
export function childAt(element: XmlElement | undefined, ...path: string[]): XmlElement | undefined {
  let at = element;
  for (const name of path) at = at?.children.find((child) => child.name === name);
  return at;
}

export function textAt(element: XmlElement | undefined, ...path: string[]): string | undefined {
  return childAt(element, ...path)?.text;
}
