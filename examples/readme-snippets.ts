import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ts from 'typescript';

/** One ```ts block of a README, where it is. */
export interface Snippet {
  document: string;
  line: number;
  code: string;
}

/** The ```ts blocks of a markdown file (`document`, relative to `root`), with the line each starts on. */
export function snippetsOf(root: string, document: string): Snippet[] {
  const text = readFileSync(join(root, document), 'utf8');
  const snippets: Snippet[] = [];
  for (const match of text.matchAll(/^```ts\n([\s\S]*?)^```/gm)) {
    const line = text.slice(0, match.index).split('\n').length + 1;
    snippets.push({ document, line, code: match[1]! });
  }
  return snippets;
}

/**
 * What a snippet may use without defining it, as the README's text around it defines it: a name to the line
 * that declares (or imports) it. A snippet gets only the lines for names it uses and does not define itself.
 */
export type Prelude = Readonly<Record<string, string>>;

/** The names a snippet defines at its top level: its imports and its declarations. */
function definedNames(code: string): Set<string> {
  const source = ts.createSourceFile('snippet.ts', code, ts.ScriptTarget.ES2022, true);
  const names = new Set<string>();
  const bind = (name: ts.BindingName) => {
    if (ts.isIdentifier(name)) names.add(name.text);
    else
      for (const element of name.elements) if (!ts.isOmittedExpression(element)) bind(element.name);
  };
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      if (clause?.name !== undefined) names.add(clause.name.text);
      const bindings = clause?.namedBindings;
      if (bindings !== undefined && ts.isNamedImports(bindings))
        for (const element of bindings.elements) names.add(element.name.text);
      if (bindings !== undefined && ts.isNamespaceImport(bindings)) names.add(bindings.name.text);
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) bind(declaration.name);
    } else if (
      (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) &&
      statement.name !== undefined
    ) {
      names.add(statement.name.text);
    }
  }
  return names;
}

/** The identifiers a snippet mentions anywhere. */
function usedNames(code: string): Set<string> {
  const names = new Set<string>();
  const source = ts.createSourceFile('snippet.ts', code, ts.ScriptTarget.ES2022, true);
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node)) names.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return names;
}

/**
 * The TypeScript a snippet is checked as: the prelude lines it needs, then the snippet, as a module; and how many
 * lines come before the snippet's first.
 */
export function moduleOf(snippet: Snippet, prelude: Prelude): { text: string; offset: number } {
  const defined = definedNames(snippet.code);
  const used = usedNames(snippet.code);
  const needed = Object.entries(prelude)
    .filter(([name]) => used.has(name) && !defined.has(name))
    .map(([, line]) => line);
  return { text: `${[...needed, snippet.code].join('\n')}\nexport {};\n`, offset: needed.length };
}

/**
 * Type-checks modules (a file name to its text; packages resolve as for a file at that path) in one program with
 * `compilerOptions`; returns each error with its file and line (1-based, in the module's text) and message.
 */
export function typeErrors(
  modules: ReadonlyMap<string, string>,
  compilerOptions: ts.CompilerOptions,
): Array<{ file: string | undefined; line: number; message: string }> {
  const host = ts.createCompilerHost(compilerOptions, true);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  const directoryExists = host.directoryExists?.bind(host);
  const folders = new Set([...modules.keys()].map((file) => dirname(file)));
  host.readFile = (file) => modules.get(file) ?? readFile(file);
  host.fileExists = (file) => modules.has(file) || fileExists(file);
  host.directoryExists = (folder) => folders.has(folder) || (directoryExists?.(folder) ?? true);
  host.getSourceFile = (file, language, onError, create) => {
    const text = modules.get(file);
    return text === undefined
      ? getSourceFile(file, language, onError, create)
      : ts.createSourceFile(file, text, language, true);
  };
  const program = ts.createProgram([...modules.keys()], compilerOptions, host);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.file === undefined || modules.has(diagnostic.file.fileName))
    .map((diagnostic) => {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      if (diagnostic.file === undefined || diagnostic.start === undefined)
        return { file: undefined, line: 0, message };
      const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      return { file: diagnostic.file.fileName, line: line + 1, message };
    });
}

/** The compiler options of a tsconfig file, resolved as `tsc -p` would. */
export function compilerOptionsOf(tsconfig: string): ts.CompilerOptions {
  const { config } = ts.readConfigFile(tsconfig, ts.sys.readFile);
  return ts.parseJsonConfigFileContent(config, ts.sys, dirname(tsconfig)).options;
}
