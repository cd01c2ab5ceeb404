/**
 * The chat page of the browser test (chat-browser.test.ts): the AI SDK's real `useChat` with Cairn's transport,
 * as an app would write it. Bundled by the test for each AI SDK line (`@ai-sdk/react` is aliased to the other
 * line's package for AI SDK 7). It shows the last answer's visible text and says what the chat is doing in
 * data attributes the test reads.
 */
import { useChat } from '@ai-sdk/react';
import { cairnChatTransport, visibleParts } from '@cairn/ai-sdk/client';
import type { UIMessageChunk } from 'ai';
import { createElement as h, useState, type FormEvent } from 'react';
import { createRoot } from 'react-dom/client';

/** The chat's id outlives a reload (as the transport's position does), so the page resumes the same chat. */
function chatId(): string {
  const key = 'chat-page:chat-id';
  let id = sessionStorage.getItem(key);
  if (id === null) {
    id = crypto.randomUUID();
    sessionStorage.setItem(key, id);
  }
  return id;
}

const transport = cairnChatTransport<UIMessageChunk>({ api: '/api/chat' });

function Chat() {
  const id = chatId();
  const { messages, sendMessage, stop, status, error } = useChat({ id, transport, resume: true });
  const [input, setInput] = useState('');
  const answer = messages.filter((message) => message.role === 'assistant').at(-1);
  const text = (answer === undefined ? [] : visibleParts(answer))
    .map((part) => (part.type === 'text' ? part.text : ''))
    .join('');
  const superseded =
    answer?.parts.filter((part) => part.type === 'data-cairn-superseded').length ?? 0;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    void sendMessage({ text: input });
    setInput('');
  };
  return h(
    'main',
    {
      id: 'chat',
      'data-chat-id': id,
      'data-status': status,
      'data-superseded': superseded,
      'data-error': error?.message ?? '',
    },
    h(
      'form',
      { onSubmit: submit },
      h('input', {
        id: 'prompt',
        value: input,
        onChange: (event: FormEvent<HTMLInputElement>) => setInput(event.currentTarget.value),
      }),
      h('button', { id: 'send', type: 'submit' }, 'Send'),
      h('button', { id: 'stop', type: 'button', onClick: () => void stop() }, 'Stop'),
    ),
    h('pre', { id: 'answer' }, text),
  );
}

createRoot(document.getElementById('root')!).render(h(Chat));
