import { beforeAll, describe, expect, it } from 'vitest';

import { smallTraining } from './fixtures';

describe('ReportWidget', () => {
  beforeAll(() => {
    // jsdom has no DragEvent; Lumino's drag-and-drop module (loaded by @lumino/widgets) needs the name.
    const g = globalThis as unknown as Record<string, unknown>;
    g.DragEvent ??= class extends MouseEvent {};
  });

  it('marks its node with the MIME type it renders, as JupyterLab renderers do', async () => {
    const { ReportWidget } = await import('../src/widget');
    const widget = new ReportWidget();
    expect(widget.node.getAttribute('data-mime-type')).toBe('application/vnd.npu-jupyter.report+json');
    await widget.renderModel({
      data: { 'application/vnd.npu-jupyter.report+json': smallTraining() }
    } as never);
    expect(widget.node.querySelector('.npu-summary')).not.toBeNull();
    expect(widget.node.getAttribute('data-mime-type')).toBe('application/vnd.npu-jupyter.report+json');
  });
});
